//! Drawing: a pure function of the dashboard's state and the latest
//! snapshot. Nothing here reads the clock, the terminal or the fleet, so
//! every screen is tested as text with ratatui's `TestBackend`.
//!
//! Layout, top to bottom: header; topology; service table; charts beside
//! the event log; footer. Each panel asks for the lines it needs and the
//! charts take what is left; on a small terminal the topology turns
//! compact and scrolls, the table scrolls, and the charts shrink to
//! sparklines before anything is cut. `--big` swaps this for [`big`]'s
//! layout, and `--theme` renders the colours of either ([`theme::Theme`]).

pub mod banner;
pub mod big;
pub mod callers;
pub mod capacity;
pub mod charts;
pub mod footer;
pub mod format;
pub mod header;
pub mod help;
pub mod log;
pub mod replicas;
pub mod roots;
pub mod table;
pub mod tap;
pub mod theme;
pub mod topology;

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Paragraph, Widget};
use ratatui::Frame;

use super::state::{Beside, Focus, State};
use crate::lab::Snapshot;

/// Lines the charts and log want at least, when there is room.
const BOTTOM_MIN: u16 = 9;

/// Draws one frame, its colours rendered in the state's theme. With
/// `color` off, every cell loses its colours but keeps its glyphs and its
/// bold / reverse / dim attributes, whatever the theme.
pub fn draw(state: &State, s: &Snapshot, frame: &mut Frame, color: bool) {
    let area = frame.area();
    render(state, s, area, frame.buffer_mut());
    if color {
        state.theme.paint(frame.buffer_mut(), area);
    } else {
        strip_colors(frame.buffer_mut(), area);
    }
}

/// Draws the whole screen into `buf`: the big layout when the state asks
/// for it and the terminal can hold it, else the full one.
pub fn render(state: &State, s: &Snapshot, area: Rect, buf: &mut Buffer) {
    if area.width < 20 || area.height < 6 {
        Paragraph::new("chaoslab: the terminal is too small (q quits)").render(area, buf);
        return;
    }
    if state.big && big::render(state, s, area, buf) {
        return;
    }
    let controls = state.controls(s);
    let mut head = header::lines(s, &controls, area.width);
    head.extend(banner::lines(state, s, area.width));
    let head_h = (head.len() as u16).min(area.height / 3);
    let rest = area.height - head_h - 1;
    let inner_w = area.width.saturating_sub(2);

    let table_want = table::height(s);
    // A mesh is not drawn: the selected service's callers, a level a line,
    // take the topology's place.
    let mesh = callers::is_mesh(s);
    let plan = (!mesh).then(|| {
        let tall = topology::GraphLayout::new(s, inner_w, true);
        if tall.height() + 2 + table_want + BOTTOM_MIN + 3 <= rest {
            tall
        } else {
            topology::GraphLayout::new(s, inner_w, false)
        }
    });
    let topo_want = match &plan {
        Some(p) => p.height() + 2,
        None => callers::height(state, s),
    };
    let topo_h = topo_want.min((rest / 3).max(3));
    // The table comes first (every service, if it can), then the charts.
    let bottom_min = if rest >= 30 { BOTTOM_MIN } else { 5 };
    let mut table_h = table_want
        .min(rest.saturating_sub(topo_h + bottom_min))
        .max(table_want.min(5))
        .min(rest.saturating_sub(topo_h));
    let mut bottom_h = rest - topo_h - table_h;
    if bottom_h < 4 {
        table_h += bottom_h;
        bottom_h = 0;
    }

    let [head_a, topo_a, table_a, bottom_a, foot_a] = Layout::vertical([
        Constraint::Length(head_h),
        Constraint::Length(topo_h),
        Constraint::Length(table_h),
        Constraint::Length(bottom_h),
        Constraint::Length(1),
    ])
    .areas(area);

    Paragraph::new(head).render(head_a, buf);

    match plan {
        Some(plan) => {
            let topo_block = Block::bordered()
                .border_type(BorderType::Rounded)
                .border_style(theme::border(state.focus == Focus::Topology))
                .title(Line::from(Span::styled(
                    " topology ",
                    Style::new().add_modifier(Modifier::BOLD),
                )))
                .title_bottom(topology::legend(s));
            let topo_inner = topo_block.inner(topo_a);
            topo_block.render(topo_a, buf);
            plan.render(s, state.selected, topo_inner, buf);
        }
        None => callers::render(state, s, topo_a, buf),
    }

    table::render(state, s, table_a, buf);

    if bottom_h > 0 {
        let split = if area.width >= 120 { 58 } else { 55 };
        let [charts_a, log_a] = Layout::horizontal([
            Constraint::Percentage(split),
            Constraint::Percentage(100 - split),
        ])
        .areas(bottom_a);
        charts::render(state, s, charts_a, buf);
        match state.beside {
            Beside::Tap => tap::render(state, s, log_a, buf),
            Beside::Replicas => replicas::render(state, s, log_a, buf),
            Beside::Roots => roots::render(state, s, log_a, buf),
            Beside::Log => log::render(state, s, log_a, buf),
        }
    }

    let capacity = has_workers(s);
    footer::line(area.width, capacity).render(foot_a, buf);

    if state.help {
        help::render(area, buf, capacity, &state.listening);
    }
}

/// Whether some service has workers: the capacity keys, figures, bars
/// and chart are drawn only then, so a fleet without them looks as before.
pub fn has_workers(s: &Snapshot) -> bool {
    s.state.resources.iter().any(|r| r.workers.is_some())
}

/// Removes every colour, keeping symbols and attributes.
pub fn strip_colors(buf: &mut Buffer, area: Rect) {
    for y in area.top()..area.bottom() {
        for x in area.left()..area.right() {
            if let Some(c) = buf.cell_mut((x, y)) {
                c.fg = Color::Reset;
                c.bg = Color::Reset;
                c.underline_color = Color::Reset;
            }
        }
    }
}

#[cfg(test)]
mod lab_tests;
#[cfg(test)]
mod tests;
