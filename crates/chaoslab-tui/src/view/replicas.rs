//! The selected service expanded, in place of the event log: its
//! endpoints (each one's rate, error rate and amplification over the live
//! window; they share the service's workers and replicas), then its
//! replicas (each one's rate, error rate, share of the first attempts and
//! the retries sent to it), so one bad host behind a load balancer, and
//! where the retries it causes land, show. Under outlier detection (SPEC
//! section 17) two more columns say whether its callers have it ejected
//! now (`out`, or how many callers do) and how many times they ejected
//! it over the window; on a narrow panel they take the retries' place.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use super::theme;
use crate::lab::Snapshot;
use crate::state::State;

/// Draws the selected service's replicas, one line each.
pub fn render(state: &State, s: &Snapshot, area: Rect, buf: &mut Buffer) {
    // Inside the border: the header line, then a line per replica, the
    // last one saying how many did not fit.
    let inner = area.height.saturating_sub(2) as usize;
    let view = s.services.get(state.selected);
    let name = view.map_or("?", |v| v.name.as_str());
    let group = view.and_then(|v| v.service.as_deref());
    let title = Line::from(vec![
        Span::styled(
            format!(
                " {} · {} ",
                if group.is_some() {
                    "endpoints, replicas"
                } else {
                    "replicas"
                },
                group.unwrap_or(name)
            ),
            Style::new().add_modifier(Modifier::BOLD),
        ),
        Span::styled("(v: events) ", theme::label()),
    ]);
    let replicas = view.map_or(&[][..], |v| v.replicas.as_slice());
    let mut lines = endpoint_lines(s, group, name);
    let above = lines.len();
    if replicas.is_empty() {
        lines.push(Line::from(Span::styled(
            format!(
                " {}: one replica (replicas: N in the topology)",
                group.unwrap_or(name)
            ),
            theme::label(),
        )));
    } else {
        // Outlier columns: when edges run outlier detection, or it has
        // ejected a replica (a call's own `policy:` may turn it on).
        let outliers = s.state.policy.outlier.is_some()
            || replicas
                .iter()
                .any(|r| r.ejections > 0 || r.ejected_now > 0);
        let wide = area.width.saturating_sub(2) >= 44;
        let header = match (outliers, wide) {
            (false, _) => "   #     rps   err%   1st% retry/s",
            (true, true) => "   #     rps   err%   1st% retry/s  out ejct",
            (true, false) => "   #     rps   err%   1st% out  ej",
        };
        lines.push(Line::from(Span::styled(header, theme::label())));
        let room = inner.saturating_sub(1 + above);
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
            let mut row = format!(
                " {:>3} {:>7.1} {:>5.1}% {:>5.1}%",
                r.replica,
                r.rps,
                r.error_rate * 100.0,
                r.first_attempt_share * 100.0,
            );
            if !outliers || wide {
                row += &format!(" {:>7.1}", r.retry_rps);
            }
            if outliers {
                let out = match r.ejected_now {
                    0 => "-".to_string(),
                    1 => "out".to_string(),
                    n => format!("{n}×"),
                };
                if wide {
                    row += &format!(" {out:>4} {:>4}", r.ejections);
                } else {
                    row += &format!(" {out:>3} {:>3}", r.ejections);
                }
            }
            lines.push(Line::from(Span::styled(row, style)));
        }
        if replicas.len() > rows {
            lines.push(Line::from(Span::styled(
                format!(" … {} more (a taller terminal)", replicas.len() - rows),
                theme::label(),
            )));
        }
    }
    super::log::panel(state, title, lines, area, buf);
}

/// The endpoints of the selected node's service, a line each (the
/// selected one marked), or nothing for a service without endpoints.
fn endpoint_lines<'a>(s: &'a Snapshot, group: Option<&str>, selected: &str) -> Vec<Line<'a>> {
    let Some(g) = group else { return vec![] };
    let mut lines = vec![Line::from(Span::styled(
        "  endpoint          rps   err%     amp",
        theme::label(),
    ))];
    for v in s
        .services
        .iter()
        .filter(|v| v.service.as_deref() == Some(g))
    {
        let endpoint = v
            .name
            .strip_prefix(g)
            .map_or(v.name.as_str(), |e| e.trim_start_matches('/'));
        let err = v.live[crate::lab::figures::Figure::ErrorRate];
        let style = if err >= 0.5 {
            theme::alarm()
        } else if err > 0.0 {
            theme::warn()
        } else {
            Style::new()
        };
        lines.push(Line::from(Span::styled(
            format!(
                " {}{:<12} {:>7.1} {:>5.1}% {:>7}",
                if v.name == selected { '▸' } else { ' ' },
                crate::report::table::truncate(endpoint, 12),
                v.live[crate::lab::figures::Figure::Rps],
                if err.is_finite() { err * 100.0 } else { 0.0 },
                v.amplification()
                    .map_or_else(|| "-".into(), |a| format!("{a:.2}x"))
            ),
            style,
        )));
    }
    lines
}
