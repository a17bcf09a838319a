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
    // Inside the border: the header line, then a line per replica, the
    // last one saying how many did not fit.
    let inner = area.height.saturating_sub(2) as usize;
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
            format!(" {name}: one replica (replicas: N in the topology)"),
            theme::label(),
        )));
    } else {
        lines.push(Line::from(Span::styled(
            "   #     rps   err%   1st% retry/s",
            theme::label(),
        )));
        let room = inner.saturating_sub(1);
        let rows = if replicas.len() > room {
            room.saturating_sub(1)
        } else {
            room
        };
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
                    " {:>3} {:>7.1} {:>5.1}% {:>5.1}% {:>7.1}",
                    r.replica,
                    r.rps,
                    r.error_rate * 100.0,
                    r.first_attempt_share * 100.0,
                    r.retry_rps
                ),
                style,
            )));
        }
        if replicas.len() > rows {
            lines.push(Line::from(Span::styled(
                format!(" … {} more (a taller terminal)", replicas.len() - rows),
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
