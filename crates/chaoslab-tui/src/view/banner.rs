//! A scenario playing in the dashboard: a progress strip with the steps
//! as marks, the current caption as a banner, the expectations turning ✓
//! or ✗ as their windows close, and the verdict at the end. Nothing is
//! drawn without a scenario.

use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use super::theme;
use crate::lab::Snapshot;
use crate::state::State;

/// The banner's lines for `width` columns (none without a scenario).
pub fn lines(state: &State, s: &Snapshot, width: u16) -> Vec<Line<'static>> {
    let Some(tl) = &s.timeline else {
        return vec![];
    };
    let w = width as usize;
    let end = state
        .scenario_end
        .unwrap_or_else(|| tl.marks.last().copied().unwrap_or(tl.now))
        .max(std::time::Duration::from_millis(1));
    let judged = &state.verdicts;
    let ok = judged.iter().filter(|j| j.passed == Some(true)).count();
    let bad = judged.iter().filter(|j| j.passed == Some(false)).count();
    let open = judged.len() - ok - bad;
    let head = if tl.held {
        Span::styled(" ⏸ HELD ", theme::warn().add_modifier(Modifier::REVERSED))
    } else {
        Span::styled(" ▶ ", Style::new().add_modifier(Modifier::BOLD))
    };
    let clock = format!(" {:>5.1}s ", tl.now.as_secs_f64());
    let steps_played = tl.marks.iter().filter(|m| **m <= tl.now).count();
    let (end_s, marks) = (end.as_secs_f64(), tl.marks.len());
    let tail = if w >= 120 {
        let enter = if state.tour {
            " · Enter next chapter"
        } else {
            ""
        };
        format!(
            " {end_s:.0}s · step {steps_played}/{marks} · ✓{ok} ✗{bad} · {open} to come · n next · P hold{enter} "
        )
    } else {
        let enter = if state.tour { " · Enter ▶" } else { "" };
        format!(" {end_s:.0}s · {steps_played}/{marks} · ✓{ok} ✗{bad}{enter} ")
    };
    let head_w = 3 + clock.chars().count() + if tl.held { 5 } else { 0 };
    let bar_w = w.saturating_sub(head_w + tail.chars().count()).max(4);
    let at = |t: std::time::Duration| {
        ((t.as_secs_f64() / end.as_secs_f64()) * (bar_w - 1) as f64)
            .round()
            .clamp(0.0, (bar_w - 1) as f64) as usize
    };
    let now = at(tl.now);
    let mut bar: Vec<char> = (0..bar_w)
        .map(|i| if i < now { '━' } else { '─' })
        .collect();
    for m in &tl.marks {
        bar[at(*m)] = '┃';
    }
    bar[now] = '●';
    let strip = Line::from(vec![
        head,
        Span::styled(clock, theme::figure()),
        Span::raw(bar.into_iter().collect::<String>()),
        Span::styled(tail, theme::label()),
    ]);
    let mut out = vec![strip];
    let finished = state.scenario_end.is_some_and(|e| tl.now >= e) && open == 0;
    if finished && !judged.is_empty() {
        let text = if bad == 0 {
            format!(" PASS  all {} expectations held ", judged.len())
        } else {
            let first = judged
                .iter()
                .find(|j| j.passed == Some(false))
                .map(|j| format!(": {} (observed {:.3})", j.what, j.observed))
                .unwrap_or_default();
            format!(
                " FAIL  {bad} of {} expectations failed{first} ",
                judged.len()
            )
        };
        let style = if bad == 0 {
            theme::good()
        } else {
            theme::alarm()
        };
        out.push(Line::from(Span::styled(
            text,
            style.add_modifier(Modifier::REVERSED | Modifier::BOLD),
        )));
        if state.tour {
            out.push(Line::from(Span::styled(
                " Enter: the next chapter · q: leave the tour ",
                Style::new().add_modifier(Modifier::BOLD),
            )));
        }
    } else if let Some((_, say)) = &tl.caption {
        out.push(Line::from(Span::styled(
            format!(" » {say} "),
            Style::new().add_modifier(Modifier::BOLD | Modifier::REVERSED),
        )));
    }
    // The newest judgements, as they come.
    let recent: Vec<Span<'static>> = judged
        .iter()
        .filter(|j| j.passed.is_some())
        .rev()
        .take(3)
        .flat_map(|j| {
            let (mark, style) = match j.passed {
                Some(true) => ("✓", theme::good()),
                _ => ("✗", theme::alarm()),
            };
            [
                Span::styled(format!(" {mark} "), style.add_modifier(Modifier::BOLD)),
                Span::raw(format!("{} ({:.3})  ", j.what, j.observed)),
            ]
        })
        .collect();
    if !recent.is_empty() {
        out.push(Line::from(recent));
    }
    out
}
