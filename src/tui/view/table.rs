//! The service table: one row per service, the columns that fit the
//! width (the most telling ones first), sorted as the state says, the
//! selected row highlighted. Amplification is shown beside the model's
//! figure and marked `*` (and coloured) when they disagree by over 5%.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{
    Block, BorderType, Cell, HighlightSpacing, Row, StatefulWidget, Table, TableState,
};

use super::format;
use super::theme;
use crate::scenario::snapshot::ServiceView;
use crate::scenario::Snapshot;
use crate::tui::state::{Focus, State};

type CellFn = fn(&ServiceView) -> (String, Style);

struct Col {
    title: &'static str,
    right: bool,
    /// Lower stays longer when the table is narrow.
    rank: u8,
    cell: CellFn,
}

fn plain(s: String) -> (String, Style) {
    (s, Style::new())
}

#[rustfmt::skip]
const COLS: &[Col] = &[
    Col { title: "service", right: false, rank: 0, cell: |v| (format!("{} {}", theme::glyph(v.state), v.name), theme::text(v.state)) },
    Col { title: "depth", right: true, rank: 6, cell: |v| plain(v.depth.to_string()) },
    Col { title: "rps", right: true, rank: 1, cell: |v| plain(format::rps(v.rps)) },
    Col { title: "amp", right: true, rank: 0, cell: amp_cell },
    Col { title: "model", right: true, rank: 0, cell: |v| (format::amp(Some(v.model_amplification)), theme::label()) },
    Col { title: "err%", right: true, rank: 2, cell: |v| (format::pct1(v.error_rate), if v.error_rate >= 0.01 { theme::alarm() } else { Style::new() }) },
    Col { title: "returned t/f/-", right: true, rank: 3, cell: |v| plain(format::claims(v.claims_returned)) },
    Col { title: "seen t/f/-", right: true, rank: 7, cell: |v| plain(format::claims(v.claims_seen)) },
    Col { title: "retries", right: true, rank: 2, cell: |v| (format::count(v.retries_sent), if v.retry_rps >= 0.05 { theme::alarm() } else { Style::new() }) },
    Col { title: "suppressed", right: true, rank: 3, cell: |v| (format::count(v.retries_suppressed), if v.retries_suppressed > 0 { theme::good() } else { Style::new() }) },
    Col { title: "denied", right: true, rank: 4, cell: |v| plain(format::count(v.budget_denied)) },
    Col { title: "fault", right: false, rank: 4, cell: |v| (format::fault(&v.fault), if v.fault.is_active() { theme::alarm() } else { theme::label() }) },
    Col { title: "context", right: false, rank: 5, cell: |v| if v.context_dropped { ("dropped".into(), theme::text(crate::scenario::snapshot::ServiceState::ContextDropped)) } else { ("kept".into(), theme::label()) } },
];

fn amp_cell(v: &ServiceView) -> (String, Style) {
    let a = format::amp(v.amplification);
    if theme::disagrees(v.amplification, v.model_amplification) {
        (format!("{a}*"), theme::warn())
    } else {
        (format!("{a} "), theme::figure())
    }
}

/// Rows the table wants: its services, a header and two borders.
pub fn height(s: &Snapshot) -> u16 {
    s.services.len() as u16 + 3
}

/// Draws the table.
pub fn render(state: &State, s: &Snapshot, area: Rect, buf: &mut Buffer) {
    let order = state.order(s);
    let inner_w = area.width.saturating_sub(2) as usize;
    // Content widths.
    let widths: Vec<usize> = COLS
        .iter()
        .map(|c| {
            s.services
                .iter()
                .map(|v| (c.cell)(v).0.chars().count())
                .chain([c.title.chars().count() + 1])
                .max()
                .unwrap_or(1)
        })
        .collect();
    // Keep the lowest ranks that fit (2 for the highlight mark, 1 between columns).
    let mut keep = vec![false; COLS.len()];
    for rank in 0..=9u8 {
        let mut trial = keep.clone();
        for (i, c) in COLS.iter().enumerate() {
            if c.rank == rank {
                trial[i] = true;
            }
        }
        let used: usize = 2 + trial
            .iter()
            .zip(&widths)
            .filter(|(k, _)| **k)
            .map(|(_, w)| w + 1)
            .sum::<usize>();
        if used <= inner_w || rank == 0 {
            keep = trial;
        } else {
            break;
        }
    }
    let cols: Vec<usize> = (0..COLS.len()).filter(|&i| keep[i]).collect();
    // Breathing room between columns when the width allows.
    let content: usize = cols.iter().map(|&i| widths[i]).sum::<usize>() + 2;
    let spacing = if content + 2 * cols.len() <= inner_w {
        2
    } else {
        1
    };
    let header = Row::new(cols.iter().map(|&i| {
        let c = &COLS[i];
        let mut t = c.title.to_string();
        if sort_title(state) == Some(c.title) {
            t = format!("{t}{}", if state.descending { "▼" } else { "▲" });
        }
        let line = Line::from(Span::styled(
            t,
            Style::new().add_modifier(Modifier::BOLD | Modifier::UNDERLINED),
        ));
        Cell::from(if c.right { line.right_aligned() } else { line })
    }));
    let rows = order.iter().map(|&id| {
        let v = &s.services[id];
        Row::new(cols.iter().map(|&i| {
            let c = &COLS[i];
            let (text, style) = (c.cell)(v);
            let line = Line::from(Span::styled(text, style));
            Cell::from(if c.right { line.right_aligned() } else { line })
        }))
    });
    let constraints: Vec<Constraint> = cols
        .iter()
        .map(|&i| Constraint::Length(widths[i] as u16))
        .collect();
    let disagree = s
        .services
        .iter()
        .any(|v| theme::disagrees(v.amplification, v.model_amplification));
    let mut title = vec![
        Span::styled(" services ", Style::new().add_modifier(Modifier::BOLD)),
        Span::styled(
            format!("· sorted by {} (s) ", state.sort.name()),
            theme::label(),
        ),
    ];
    if disagree {
        title.push(Span::styled(
            "· * differs from the model by over 5% ",
            theme::warn(),
        ));
    }
    let focused = state.focus == Focus::Table;
    let table = Table::new(rows, constraints)
        .header(header)
        .column_spacing(spacing)
        .block(
            Block::bordered()
                .border_type(BorderType::Rounded)
                .border_style(theme::border(focused))
                .title(Line::from(title)),
        )
        .row_highlight_style(theme::selected())
        .highlight_symbol("▶ ")
        .highlight_spacing(HighlightSpacing::Always);
    let mut ts = TableState::default();
    ts.select(order.iter().position(|&i| i == state.selected));
    StatefulWidget::render(table, area, buf, &mut ts);
}

fn sort_title(state: &State) -> Option<&'static str> {
    use crate::tui::state::SortKey;
    match state.sort {
        SortKey::Depth => Some("depth"),
        SortKey::Rps => Some("rps"),
        SortKey::Amplification => Some("amp"),
        SortKey::Errors => Some("err%"),
        SortKey::Retries => Some("retries"),
        SortKey::Suppressed => Some("suppressed"),
    }
}
