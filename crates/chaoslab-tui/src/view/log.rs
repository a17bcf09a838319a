//! The event log: every action applied to the lab, with its time, newest
//! at the bottom, so a presenter can point back at "here is where I
//! turned ownership on".

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Paragraph, Widget};

use super::theme;
use crate::lab::{Action, Origin, Snapshot};
use crate::state::{Focus, State};

fn style(a: &Action) -> Style {
    match a {
        Action::SetFault { fault, .. } if fault.is_active() => theme::alarm(),
        Action::SetFault { .. } => theme::good(),
        Action::Policy(_) | Action::Mode { .. } => theme::warn(),
        _ => Style::new(),
    }
}

/// Splits `text` into lines of at most `w` columns, between words when
/// it can (a word longer than a line is cut).
pub(super) fn wrap(text: &str, w: usize) -> Vec<String> {
    let w = w.max(1);
    let mut out = vec![];
    let mut cur = String::new();
    for word in text.split(' ') {
        let add = if cur.is_empty() { 0 } else { 1 } + word.chars().count();
        if !cur.is_empty() && cur.chars().count() + add > w {
            out.push(std::mem::take(&mut cur));
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(word);
        while cur.chars().count() > w {
            let head: String = cur.chars().take(w).collect();
            cur = cur.chars().skip(w).collect();
            out.push(head);
        }
    }
    if !cur.is_empty() || out.is_empty() {
        out.push(cur);
    }
    out
}

/// Timed entries as a panel's lines, the newest at the bottom: each
/// wrapped under its text after a `time_w`-wide time, newest first until
/// `inner_h` lines are full, then put in order.
pub(super) fn newest_lines(
    entries: impl DoubleEndedIterator<Item = (std::time::Duration, String, Style)>,
    time_w: usize,
    inner_w: usize,
    inner_h: usize,
) -> Vec<Line<'static>> {
    let mut rev: Vec<Line> = vec![];
    for (t, text, style) in entries.rev() {
        let parts = wrap(&text, inner_w.saturating_sub(time_w));
        let mut block: Vec<Line> = parts
            .into_iter()
            .enumerate()
            .map(|(i, part)| {
                let time = if i == 0 {
                    format!("{:>w$.1}s ", t.as_secs_f64(), w = time_w - 2)
                } else {
                    " ".repeat(time_w)
                };
                Line::from(vec![
                    Span::styled(time, theme::label()),
                    Span::styled(part, style),
                ])
            })
            .collect();
        block.reverse();
        rev.extend(block);
        if rev.len() >= inner_h {
            break;
        }
    }
    rev.truncate(inner_h.max(1));
    rev.reverse();
    rev
}

/// Draws the log: the newest events at the bottom, long ones wrapped
/// under their text (never cut at the panel's edge).
pub fn render(state: &State, s: &Snapshot, area: Rect, buf: &mut Buffer) {
    let inner_h = area.height.saturating_sub(2) as usize;
    let inner_w = area.width.saturating_sub(2) as usize;
    // The events and what the endpoints refused, in time order.
    let mut all: Vec<(std::time::Duration, String, Style)> = s
        .events
        .iter()
        .map(|e| {
            let text = match (&s.timeline, e.origin) {
                (None, _) => e.text.clone(),
                (Some(_), Origin::Timeline) => format!("▸ {}", e.text),
                (Some(_), Origin::Api) => format!("⇄ {}", e.text),
                (Some(_), Origin::Operator) => format!("✎ {}", e.text),
                (Some(_), Origin::Lab) => format!("! {}", e.text),
            };
            (e.t, text, style(&e.action))
        })
        .chain(
            s.refused
                .iter()
                .map(|(t, text)| (*t, text.clone(), theme::alarm())),
        )
        .collect();
    all.sort_by_key(|(t, _, _)| *t);
    let n = all.len();
    let scroll = state.log_scroll.min(n.saturating_sub(1));
    let mut title = vec![Span::styled(
        " events ",
        Style::new().add_modifier(Modifier::BOLD),
    )];
    if s.timeline.is_some() {
        title.push(Span::styled("▸ scripted ✎ yours ", theme::label()));
    }
    if scroll > 0 {
        title.push(Span::styled(
            format!("· {scroll} newer below "),
            theme::label(),
        ));
    }
    const TIME_W: usize = 9;
    let lines: Vec<Line> = if n == 0 {
        vec![Line::from(Span::styled(
            " nothing yet: press f, 1-4, c … and each change appears here",
            theme::label(),
        ))]
    } else {
        // With a scenario playing: what was scripted (▸), what came over
        // the API (⇄), what the person did (✎).
        all.truncate(n - scroll);
        newest_lines(all.into_iter(), TIME_W, inner_w, inner_h)
    };
    panel(state, Line::from(title), lines, area, buf);
}

/// A panel in the event log's place (the events, the wire tap, the
/// expanded service, the roots): its lines in a rounded border titled
/// `title`, lit when the log has the focus.
pub fn panel<'a>(
    state: &State,
    title: impl Into<Line<'a>>,
    lines: Vec<Line<'a>>,
    area: Rect,
    buf: &mut Buffer,
) {
    Paragraph::new(lines)
        .block(
            Block::bordered()
                .border_type(BorderType::Rounded)
                .border_style(theme::border(state.focus == Focus::Log))
                .title(title),
        )
        .render(area, buf);
}

#[cfg(test)]
mod tests {
    use super::wrap;

    #[test]
    fn wraps_between_words_and_cuts_only_overlong_words() {
        assert_eq!(
            wrap("D fails 100% (after its calls, status 500)", 16),
            ["D fails 100%", "(after its", "calls, status", "500)"]
        );
        assert_eq!(wrap("abcdefghij", 4), ["abcd", "efgh", "ij"]);
        assert_eq!(wrap("", 4), [""]);
    }
}
