//! The wire tap: the selected service's latest exchanges, each as the
//! wire carried it (the status, the claim header line as sent) and what
//! the caller did with it, so an audience sees `x-error-claim: false`
//! and the retry it did not cause.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use super::theme;
use crate::lab::snapshot::TapLine;
use crate::lab::Snapshot;
use crate::state::State;

fn style(l: &TapLine) -> Style {
    if l.then == "retried" {
        theme::warn()
    } else if l.then.starts_with("not retried") {
        theme::good()
    } else if l.status.is_none_or(|s| s >= 500) {
        theme::alarm()
    } else {
        Style::new()
    }
}

/// Draws the tap for the selected service, newest at the bottom.
pub fn render(state: &State, s: &Snapshot, area: Rect, buf: &mut Buffer) {
    let inner_h = area.height.saturating_sub(2) as usize;
    let inner_w = area.width.saturating_sub(2) as usize;
    const TIME_W: usize = 7;
    let name = s
        .services
        .get(state.selected)
        .map_or("?", |v| v.name.as_str());
    let title = Line::from(vec![
        Span::styled(
            format!(" wire tap · {name} "),
            Style::new().add_modifier(Modifier::BOLD),
        ),
        Span::styled("(t: events) ", theme::label()),
    ]);
    let mine: Vec<&TapLine> = s
        .tap
        .iter()
        .filter(|l| l.from == state.selected || l.to == state.selected)
        .collect();
    let lines: Vec<Line> = if mine.is_empty() {
        vec![Line::from(Span::styled(
            format!(" no exchange on {name}'s calls yet (sampled: one per call edge every 100 ms; only this process's services)"),
            theme::label(),
        ))]
    } else {
        let entries = mine.iter().map(|l| (l.t, l.text(), style(l)));
        super::log::newest_lines(entries, TIME_W, inner_w, inner_h)
    };
    super::log::panel(state, title, lines, area, buf);
}
