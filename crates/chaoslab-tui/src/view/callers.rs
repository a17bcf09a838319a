//! The mesh view, in place of the topology on a mesh too large to draw:
//! the selected service (on a mesh's opening, the one under the heaviest
//! storm) and the services above it, a line per level up: its immediate
//! callers, their callers, up to the user-facing roots. Each level lists
//! its services by load over baseline, the storm's first, with their
//! amplification, as far as the width allows, and how many did not fit.
//! Those are the services an error at the selected one climbs through,
//! and under ownership the ones that suppress their retries.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Paragraph, Widget};

use super::{format, table, theme};
use crate::lab::figures::Figure;
use crate::lab::roots::{beyond_chance, MESH_ROOTS};
use crate::lab::Snapshot;
use crate::state::{above, Focus, State};

/// More services than this, or more roots than [`MESH_ROOTS`], make a
/// mesh: the topology would not fit a screen, so this view replaces it.
pub const MESH_SERVICES: usize = 60;

/// Whether `s` is drawn as a mesh.
pub fn is_mesh(s: &Snapshot) -> bool {
    s.services.len() > MESH_SERVICES || s.roots.len() > MESH_ROOTS
}

/// The levels above the selected service: `levels[h]` holds the services
/// `h` calls up from it (`levels[0]` the service itself), storm first.
fn levels(state: &State, s: &Snapshot) -> Vec<Vec<usize>> {
    let Some(sel) = (state.selected < s.services.len()).then_some(state.selected) else {
        return vec![];
    };
    let hops = above(s, sel);
    let top = hops.iter().filter(|&&h| h != usize::MAX).max().copied();
    let mut levels = vec![vec![]; top.map_or(0, |t| t + 1)];
    for (i, &h) in hops.iter().enumerate() {
        if h != usize::MAX {
            levels[h].push(i);
        }
    }
    for l in &mut levels {
        l.sort_by(|&a, &b| {
            beyond_chance(&s.services[b].live).total_cmp(&beyond_chance(&s.services[a].live))
        });
    }
    levels
}

/// Lines the view wants: a level a line and two borders.
pub fn height(state: &State, s: &Snapshot) -> u16 {
    levels(state, s).len().max(1) as u16 + 2
}

/// Draws the view.
pub fn render(state: &State, s: &Snapshot, area: Rect, buf: &mut Buffer) {
    let levels = levels(state, s);
    let width = area.width.saturating_sub(2) as usize;
    let mut lines: Vec<Line> = vec![];
    let rows = area.height.saturating_sub(2) as usize;
    for (h, level) in levels.iter().enumerate().take(rows) {
        let last_row = h + 1 == rows && h + 1 < levels.len();
        if last_row {
            let rest: usize = levels[h..].iter().map(Vec::len).sum();
            lines.push(Line::from(Span::styled(
                format!(
                    " ↑{h}..↑{}  {rest} services more, up to the roots (A lists them)",
                    levels.len() - 1
                ),
                theme::label(),
            )));
            break;
        }
        lines.push(level_line(s, h, level, width));
    }
    let name = levels
        .first()
        .and_then(|l| l.first())
        .map_or("", |&i| s.services[i].name.as_str());
    let title = Line::from(vec![
        Span::styled(" callers ", Style::new().add_modifier(Modifier::BOLD)),
        Span::styled(
            format!("of {name}, a level a line up to the roots, the storm first "),
            theme::label(),
        ),
    ]);
    let block = Block::bordered()
        .border_type(BorderType::Rounded)
        .border_style(theme::border(state.focus == Focus::Topology))
        .title(title);
    Paragraph::new(lines).block(block).render(area, buf);
}

/// One level: `↑h  n services:` then each service's name and
/// amplification while they fit, then how many did not.
fn level_line<'a>(s: &'a Snapshot, h: usize, level: &[usize], width: usize) -> Line<'a> {
    let head = if h == 0 {
        " ·  ".to_string()
    } else {
        let n = level.len();
        format!(
            " ↑{h:<2} {n} {}: ",
            if n == 1 { "caller" } else { "callers" }
        )
    };
    let mut used = head.chars().count();
    let mut spans = vec![Span::styled(head, theme::label())];
    for (k, &i) in level.iter().enumerate() {
        let v = &s.services[i];
        let (amp, amp_style) = table::amp_text(v);
        let rps = format::rps(v.live[Figure::Rps]);
        let text = format!("{} {} {rps} rps  ", v.name, amp.trim_end());
        let rest = level.len() - k - 1;
        let tail = if rest > 0 {
            format!("+{rest} more").len()
        } else {
            0
        };
        if used + text.chars().count() + tail > width && k > 0 {
            spans.push(Span::styled(
                format!("+{} more", level.len() - k),
                theme::label(),
            ));
            break;
        }
        used += text.chars().count();
        spans.push(Span::styled(format!("{} ", v.name), theme::text(v.state)));
        spans.push(Span::styled(amp.trim_end().to_string(), amp_style));
        spans.push(Span::styled(format!(" {rps} rps  "), theme::label()));
    }
    Line::from(spans)
}
