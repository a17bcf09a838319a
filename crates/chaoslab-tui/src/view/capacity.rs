//! How a service with workers shows how busy it is: a utilisation bar, its
//! queue, and a saturation colour, drawn the same way wherever they appear
//! (the topology view's nodes, the service table), with glyphs that still
//! read without colour (`▕████▉▏ 97% q 812▲`).

use ratatui::style::{Color, Modifier, Style};

use super::format;
use crate::lab::figures::Figure;
use crate::lab::snapshot::ServiceView;
use crate::lab::Snapshot;

/// The workers of service `id`, if it has any.
pub fn workers(s: &Snapshot, id: usize) -> Option<u32> {
    s.state.resources.get(id).and_then(|r| r.workers)
}

/// The table's `util` cell: a four-cell bar and its percentage
/// (`▕████▏100%`), `–` for a service without workers.
pub fn util_cell(v: &ServiceView, workers: Option<u32>) -> (String, Style) {
    match workers {
        Some(w) => (
            format!("{}{}", bar(v.live[Figure::Utilisation], 4), percent(v)),
            style(v, w),
        ),
        None => ("–".into(), super::theme::label()),
    }
}

/// The table's `queue` cell (`1000▲`), `–` for a service without
/// workers.
pub fn queue_cell(v: &ServiceView, workers: Option<u32>) -> (String, Style) {
    match workers {
        Some(w) => (depth(v, w), style(v, w)),
        None => ("–".into(), super::theme::label()),
    }
}

/// Utilisation at and above which a service is saturated.
pub const SATURATED: f64 = 0.9;
/// Utilisation at and above which a service is busy (yellow).
pub const BUSY: f64 = 0.7;

/// Eighths of a cell, empty to seven-eighths.
const EIGHTHS: [char; 8] = [' ', '▏', '▎', '▍', '▌', '▋', '▊', '▉'];

/// `fraction` (clamped to 0..=1) as `cells` cells of eighth blocks between
/// `▕` and `▏`: `cells + 2` columns.
pub fn bar(fraction: f64, cells: usize) -> String {
    let f = if fraction.is_finite() {
        fraction.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let eighths = (f * cells as f64 * 8.0).round() as usize;
    let mut s = String::from("▕");
    for c in 0..cells {
        let k = eighths.saturating_sub(c * 8).min(8);
        s.push(if k == 8 { '█' } else { EIGHTHS[k] });
    }
    s.push('▏');
    s
}

/// Whether the queue is growing: more jobs wait than there are workers,
/// and the queue is at its deepest of the window.
pub fn growing(v: &ServiceView, workers: u32) -> bool {
    let (now, max) = (v.live[Figure::QueueDepth], v.live[Figure::QueueDepthMax]);
    now > f64::from(workers) && now >= max
}

/// Whether the service is saturated: utilisation at [`SATURATED`] or
/// more, or its queue growing.
pub fn saturated(v: &ServiceView, workers: u32) -> bool {
    v.live[Figure::Utilisation] >= SATURATED || growing(v, workers)
}

/// The bar's colour: red when saturated, yellow when busy, green below.
pub fn style(v: &ServiceView, workers: u32) -> Style {
    let c = if saturated(v, workers) {
        Color::Red
    } else if v.live[Figure::Utilisation] >= BUSY {
        Color::Yellow
    } else {
        Color::Green
    };
    let s = Style::new().fg(c);
    if saturated(v, workers) {
        s.add_modifier(Modifier::BOLD)
    } else {
        s
    }
}

/// Utilisation as a whole percentage, four columns: ` 97%`, `100%`.
pub fn percent(v: &ServiceView) -> String {
    let u = v.live[Figure::Utilisation];
    let u = if u.is_finite() { u.max(0.0) } else { 0.0 };
    format!("{:>3.0}%", (u * 100.0).min(999.0))
}

/// The queue now, with `▲` when it is growing: `q 812▲`, `q 0 `.
pub fn queue(v: &ServiceView, workers: u32) -> String {
    format!("q {}", depth(v, workers))
}

/// The queue's depth now, with `▲` when it is growing: `812▲`, `0 `.
pub fn depth(v: &ServiceView, workers: u32) -> String {
    let q = format::rate_short(v.live[Figure::QueueDepth].max(0.0));
    format!("{q}{}", if growing(v, workers) { "▲" } else { " " })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;

    #[test]
    fn bars_fill_by_eighths_and_stay_in_their_cells() {
        assert_eq!(bar(0.0, 4), "▕    ▏");
        assert_eq!(bar(1.0, 4), "▕████▏");
        assert_eq!(bar(1.7, 4), "▕████▏");
        assert_eq!(bar(0.5, 4), "▕██  ▏");
        assert_eq!(bar(0.97, 5), "▕████▉▏");
        assert_eq!(bar(f64::NAN, 3), "▕   ▏");
    }

    #[test]
    fn a_full_queue_at_full_utilisation_is_saturated_and_growing() {
        let s = fixtures::metastable_storm();
        let db = &s.services[1];
        assert!(saturated(db, 4) && growing(db, 4));
        assert_eq!(percent(db), "100%");
        assert_eq!(queue(db, 4), "q 1000▲");
        assert_eq!(style(db, 4).fg, Some(Color::Red));
        let mut calm = db.clone();
        calm.live.set(Figure::Utilisation, 0.75);
        calm.live.set(Figure::QueueDepth, 2.0);
        assert!(!saturated(&calm, 4));
        assert_eq!(style(&calm, 4).fg, Some(Color::Yellow));
        assert_eq!(queue(&calm, 4), "q 2 ");
    }
}
