//! The selected service's replicas, in place of the event log: each
//! replica's rate, error rate, share of the first attempts and the
//! retries sent to it over the live window, so one bad host behind a
//! load balancer, and where the retries it causes land, show.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Paragraph, Widget};

use super::theme;
use crate::lab::Snapshot;
use crate::tui::state::{Focus, State};

/// Draws the selected service's replicas, one line each.
pub fn render(state: &State, s: &Snapshot, area: Rect, buf: &mut Buffer) {
    let rows = area.height.saturating_sub(3) as usize;
    let view = s.services.get(state.selected);
    let name = view.map_or("?", |v| v.name.as_str());
    let title = Line::from(vec![
        Span::styled(
            format!(" replicas · {name} "),
            Style::new().add_modifier(Modifier::BOLD),
        ),
        Span::styled("(v: events) ", theme::label()),
    ]);
    let replicas = view.map_or(&[][..], |v| v.replicas.as_slice());
    let mut lines = vec![];
    if replicas.is_empty() {
        lines.push(Line::from(Span::styled(
            format!(" {name} has one replica (give it `replicas: N` in the topology)"),
            theme::label(),
        )));
    } else {
        lines.push(Line::from(Span::styled(
            "   #       rps    err%  first%  retries",
            theme::label(),
        )));
        for r in replicas.iter().take(rows) {
            let style = if r.error_rate >= 0.5 {
                theme::alarm()
            } else if r.error_rate > 0.0 {
                theme::warn()
            } else {
                Style::new()
            };
            lines.push(Line::from(Span::styled(
                format!(
                    " {:>3} {:>9.1} {:>6.1}% {:>6.1}% {:>8}",
                    r.replica,
                    r.rps,
                    r.error_rate * 100.0,
                    r.first_attempt_share * 100.0,
                    r.retries
                ),
                style,
            )));
        }
        if replicas.len() > rows {
            lines.push(Line::from(Span::styled(
                format!(" … and {} more", replicas.len() - rows),
                theme::label(),
            )));
        }
    }
    Paragraph::new(lines)
        .block(
            Block::bordered()
                .border_type(BorderType::Rounded)
                .border_style(theme::border(state.focus == Focus::Log))
                .title(title),
        )
        .render(area, buf);
}
