//! The roots of a topology of many (SPEC section 11), in place of the
//! event log: each user-facing root's offered rate, availability beside
//! the model's, p99 and storm radius over the live window, and its static
//! radius (Uber's per-API figure), with their max and mean below.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use super::theme;
use crate::lab::Snapshot;
use crate::state::State;

/// Draws a line per root, the last one saying how many did not fit.
pub fn render(state: &State, s: &Snapshot, area: Rect, buf: &mut Buffer) {
    let inner = area.height.saturating_sub(2) as usize;
    let title = Line::from(vec![
        Span::styled(" roots ", Style::new().add_modifier(Modifier::BOLD)),
        Span::styled("(u: events) ", theme::label()),
    ]);
    // Narrow (beside the charts on 80 columns): availability, p99 and the
    // radii; wide: the offered rate and the model's availability too.
    let wide = area.width >= 64;
    let mut lines = vec![];
    if s.roots.is_empty() {
        lines.push(Line::from(Span::styled(
            " one root (load.entries in the topology gives many)",
            theme::label(),
        )));
    } else {
        let statics: Vec<usize> = s.roots.iter().map(|r| r.static_radius).collect();
        let max = statics.iter().max().copied().unwrap_or(0);
        let mean = statics.iter().sum::<usize>() as f64 / statics.len() as f64;
        // The summary line, the header when there is room, a root a line.
        let header = inner >= s.roots.len() + 2;
        if header {
            lines.push(Line::from(Span::styled(
                if wide {
                    " root            rps  avail%  model%  p99 ms  radius static"
                } else {
                    " root        avail%  p99ms  radius"
                },
                theme::label(),
            )));
        }
        let room = inner.saturating_sub(1 + usize::from(header));
        let rows = if s.roots.len() > room {
            room.saturating_sub(1)
        } else {
            room
        };
        for r in s.roots.iter().take(rows) {
            let avail = r.availability.unwrap_or(f64::NAN);
            let style = if avail < r.model_availability - 0.02 || avail < 0.9 {
                theme::alarm()
            } else if avail < 0.999 {
                theme::warn()
            } else {
                Style::new()
            };
            let shown = r
                .availability
                .map_or_else(|| "-".into(), |a| format!("{:.1}", a * 100.0));
            let p99 = r
                .latency_ms
                .p99
                .map_or_else(|| "-".into(), |p| format!("{p:.1}"));
            let text = if wide {
                format!(
                    " {:<13} {:>5.0} {:>7} {:>7.1} {:>7} {:>6} {:>6}",
                    short(&r.entry, 13),
                    r.offered_rps,
                    shown,
                    r.model_availability * 100.0,
                    p99,
                    r.storm_radius.max,
                    r.static_radius
                )
            } else {
                format!(
                    " {:<10} {:>7} {:>6} {:>3}/{}",
                    short(&r.entry, 10),
                    shown,
                    p99,
                    r.storm_radius.max,
                    r.static_radius
                )
            };
            lines.push(Line::from(Span::styled(text, style)));
        }
        if s.roots.len() > rows {
            lines.push(Line::from(Span::styled(
                format!(" … {} more (a taller terminal)", s.roots.len() - rows),
                theme::label(),
            )));
        }
        lines.push(Line::from(Span::styled(
            format!(
                " static max {max}, mean {mean:.2} ({} roots)",
                statics.len()
            ),
            theme::label(),
        )));
    }
    super::log::panel(state, title, lines, area, buf);
}

/// A root's name in `w` columns: an endpoint `S/E` keeps its end (the
/// roots of one gateway differ only there), any other name its start.
fn short(name: &str, w: usize) -> String {
    let n = name.chars().count();
    if n <= w || !name.contains('/') {
        return crate::report::table::truncate(name, w);
    }
    let tail: String = name.chars().skip(n + 1 - w).collect();
    format!("…{tail}")
}
