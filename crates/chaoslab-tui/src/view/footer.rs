//! The footer: the most useful keys, as many as the width allows.

use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use crate::keys::{footer_keys, shown, HELP};

/// The footer line for `width` columns: keys of the lowest ranks first
/// (the capacity keys only when `capacity`: some service has workers).
pub fn line(width: u16, capacity: bool) -> Line<'static> {
    let keyed: Vec<_> = HELP
        .iter()
        .filter(|h| !h.short.is_empty() && shown(h, capacity))
        .collect();
    let render = |max_rank: u8| -> (Vec<Span<'static>>, usize) {
        let mut spans = vec![Span::raw(" ")];
        let mut w = 1;
        for h in keyed.iter().filter(|h| h.rank <= max_rank) {
            let k = format!(" {} ", footer_keys(h));
            let t = format!(" {} ", h.short);
            w += k.chars().count() + t.chars().count();
            spans.push(Span::styled(
                k,
                Style::new().add_modifier(Modifier::REVERSED | Modifier::BOLD),
            ));
            spans.push(Span::raw(t));
        }
        (spans, w)
    };
    let mut best = render(0).0;
    for rank in 1..=9 {
        let (spans, w) = render(rank);
        if w <= width as usize {
            best = spans;
        } else {
            break;
        }
    }
    Line::from(best)
}
