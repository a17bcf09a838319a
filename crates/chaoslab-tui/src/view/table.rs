//! The service table: one row per service, the columns that fit the
//! width (the most telling ones first), sorted as the state says, the
//! selected row highlighted. Amplification is shown beside the model's
//! figure and marked `*` (and coloured) when they disagree by over 5%.
//! When some service has workers, its utilisation, queue, latency and the
//! work its callers abandoned join them, first to go on a narrow screen;
//! so do a defence's columns when it is in the fleet (an adaptive
//! concurrency limit, a throttle, hedging).

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{
    Block, BorderType, Cell, HighlightSpacing, Row, StatefulWidget, Table, TableState,
};

use super::capacity;
use super::format;
use super::theme;
use crate::lab::figures::Figure;
use crate::lab::snapshot::{ServiceState, ServiceView};
use crate::lab::Snapshot;
use crate::state::{Focus, State};
use crate::topology::Fault;

/// What one row's cells read: the service's figures and its part of the
/// lab's state.
struct RowData<'a> {
    v: &'a ServiceView,
    fault: &'a Fault,
    dropped: bool,
    workers: Option<u32>,
}

type CellFn = fn(&RowData<'_>) -> (String, Style);

struct Col {
    title: &'static str,
    right: bool,
    /// Lower stays longer when the table is narrow.
    rank: u8,
    /// When it is shown at all.
    when: When,
    cell: CellFn,
}

/// Columns that mean something only with a defence in the fleet.
#[derive(Clone, Copy, PartialEq, Eq)]
enum When {
    Always,
    /// Some service has workers.
    Capacity,
    /// Some service runs an adaptive concurrency limit.
    Limit,
    /// The policy throttles, or some call was throttled.
    Throttle,
    /// Some hedge was cancelled.
    Hedge,
}

impl When {
    fn holds(self, s: &Snapshot) -> bool {
        let any = |f: Figure| s.services.iter().any(|v| v.total[f] > 0.0);
        match self {
            When::Always => true,
            When::Capacity => super::has_workers(s),
            When::Limit => any(Figure::ConcurrencyLimit),
            When::Throttle => s.state.policy.mode.throttle || any(Figure::Throttled),
            When::Hedge => any(Figure::HedgesCancelled),
        }
    }
}

fn plain(s: String) -> (String, Style) {
    (s, Style::new())
}

#[rustfmt::skip]
const COLS: &[Col] = &[
    Col { title: "service", right: false, rank: 0, when: When::Always, cell: |r| (format!("{} {}", theme::glyph(r.v.state), r.v.name), theme::text(r.v.state)) },
    Col { title: "depth", right: true, rank: 6, when: When::Always, cell: |r| plain(r.v.depth.to_string()) },
    Col { title: "rps", right: true, rank: 1, when: When::Always, cell: |r| plain(format::rps(r.v.live[Figure::Rps])) },
    Col { title: "amp", right: true, rank: 0, when: When::Always, cell: amp_cell },
    Col { title: "model", right: true, rank: 0, when: When::Always, cell: |r| (format::amp(Some(r.v.live[Figure::ModelAmplification])), theme::label()) },
    Col { title: "err%", right: true, rank: 2, when: When::Always, cell: |r| { let e = r.v.live[Figure::ErrorRate]; (format::pct1(e), if e >= 0.01 { theme::alarm() } else { Style::new() }) } },
    Col { title: "returned t/f/-", right: true, rank: 3, when: When::Always, cell: |r| plain(format::claims(r.v.claims(Figure::ClaimsReturnedTrue))) },
    Col { title: "seen t/f/-", right: true, rank: 7, when: When::Always, cell: |r| plain(format::claims(r.v.claims(Figure::ClaimsSeenTrue))) },
    Col { title: "retries", right: true, rank: 2, when: When::Always, cell: |r| (format::count(r.v.total.count(Figure::RetriesSent)), if r.v.retry_rps >= 0.05 { theme::alarm() } else { Style::new() }) },
    Col { title: "suppressed", right: true, rank: 3, when: When::Always, cell: |r| { let n = r.v.total.count(Figure::RetriesSuppressed); (format::count(n), if n > 0 { theme::good() } else { Style::new() }) } },
    Col { title: "denied", right: true, rank: 4, when: When::Always, cell: |r| plain(format::count(r.v.total.count(Figure::BudgetDenied))) },
    Col { title: "fault", right: false, rank: 4, when: When::Always, cell: |r| (format::fault(r.fault), if r.fault.is_active() { theme::alarm() } else { theme::label() }) },
    Col { title: "context", right: false, rank: 5, when: When::Always, cell: |r| if r.dropped { ("dropped".into(), theme::text(ServiceState::ContextDropped)) } else { ("kept".into(), theme::label()) } },
    Col { title: "util", right: false, rank: 8, when: When::Capacity, cell: |r| capacity::util_cell(r.v, r.workers) },
    Col { title: "queue", right: true, rank: 8, when: When::Capacity, cell: |r| capacity::queue_cell(r.v, r.workers) },
    Col { title: "p99 ms", right: true, rank: 8, when: When::Capacity, cell: |r| plain(latency(r.v.live[Figure::LatencyMsP99])) },
    Col { title: "timeouts", right: true, rank: 9, when: When::Capacity, cell: |r| plain(format::count(r.v.total.count(Figure::Timeouts))) },
    Col { title: "shed", right: true, rank: 9, when: When::Capacity, cell: |r| plain(format::count(r.v.total.count(Figure::Shed))) },
    Col { title: "wasted", right: true, rank: 9, when: When::Capacity, cell: |r| plain(format::count(r.v.total.count(Figure::WorkWasted))) },
    Col { title: "limit", right: true, rank: 4, when: When::Limit, cell: |r| plain(limit(r.v)) },
    Col { title: "limited", right: true, rank: 5, when: When::Limit, cell: |r| plain(format::count(r.v.total.count(Figure::Limited))) },
    Col { title: "throttled", right: true, rank: 3, when: When::Throttle, cell: |r| { let n = r.v.total.count(Figure::Throttled); (format::count(n), if n > 0 { theme::warn() } else { Style::new() }) } },
    Col { title: "hedges cancelled", right: true, rank: 5, when: When::Hedge, cell: |r| plain(format::count(r.v.total.count(Figure::HedgesCancelled))) },
];

/// A service's adaptive concurrency limit now, `–` without one.
fn limit(v: &ServiceView) -> String {
    match v.live[Figure::ConcurrencyLimit] {
        l if l > 0.0 => format!("{l:.0}"),
        _ => "–".into(),
    }
}

/// Milliseconds: one decimal below 100, whole above.
fn latency(ms: f64) -> String {
    if !ms.is_finite() {
        "–".into()
    } else if ms < 99.95 {
        format!("{ms:.1}")
    } else {
        format!("{ms:.0}")
    }
}

fn amp_cell(r: &RowData<'_>) -> (String, Style) {
    amp_text(r.v)
}

/// A service's amplification as the table writes it: bold, or marked `*`
/// and coloured when its count differs from the model's beyond chance;
/// over too few requests for a ratio, the count (`n=3`).
pub(super) fn amp_text(v: &ServiceView) -> (String, Style) {
    if let Some(n) = v.too_few() {
        return (format!("n={n} "), theme::label());
    }
    let amp = v.amplification();
    let a = format::amp(amp);
    if v.differs_from_model() {
        (format!("{a}*"), theme::warn())
    } else {
        (format!("{a} "), theme::figure())
    }
}

fn row(s: &Snapshot, id: usize) -> RowData<'_> {
    RowData {
        v: &s.services[id],
        fault: &s.state.faults[id],
        dropped: s.state.context_dropped[id],
        workers: capacity::workers(s, id),
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
    let shown_at_all: Vec<bool> = COLS.iter().map(|c| c.when.holds(s)).collect();
    // Only the rows in sight are drawn (a mesh has thousands): the
    // selected one last when it is below the first screenful, as a fresh
    // table scrolls.
    let fits = (area.height.saturating_sub(3) as usize).max(1);
    let at = order.iter().position(|&i| i == state.selected);
    let from = at.map_or(0, |p| (p + 1).saturating_sub(fits));
    let shown = &order[from..(from + fits).min(order.len())];
    // Content widths.
    let widths: Vec<usize> = COLS
        .iter()
        .map(|c| {
            shown
                .iter()
                .map(|&id| (c.cell)(&row(s, id)).0.chars().count())
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
            if c.rank == rank && shown_at_all[i] {
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
    let rows = shown.iter().map(|&id| {
        let data = row(s, id);
        Row::new(cols.iter().map(|&i| {
            let c = &COLS[i];
            let (text, style) = (c.cell)(&data);
            let line = Line::from(Span::styled(text, style));
            Cell::from(if c.right { line.right_aligned() } else { line })
        }))
    });
    let constraints: Vec<Constraint> = cols
        .iter()
        .map(|&i| Constraint::Length(widths[i] as u16))
        .collect();
    let disagree = s.services.iter().any(ServiceView::differs_from_model);
    let mut title = vec![
        Span::styled(" services ", Style::new().add_modifier(Modifier::BOLD)),
        Span::styled(
            format!("· sorted by {} (s) ", state.sort.name()),
            theme::label(),
        ),
    ];
    if let Some(a) = state.ancestry.filter(|&a| a < s.services.len()) {
        title.push(Span::styled(
            format!(
                "· {} and the {} services above it, nearest first (A: all) ",
                s.services[a].name,
                above_count(state, s, &order, a)
            ),
            theme::figure(),
        ));
    }
    if state.typing || !state.filter.is_empty() {
        let cursor = if state.typing { "▏" } else { "" };
        title.push(Span::styled(
            format!("· /{}{cursor} ", state.filter),
            theme::figure(),
        ));
    }
    if order.len() < s.services.len() {
        title.push(Span::styled(
            format!("· {} of {} ", order.len(), s.services.len()),
            theme::label(),
        ));
    }
    if disagree {
        title.push(Span::styled(
            "· * differs from the model beyond chance (99.9%) ",
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
    ts.select(at.map(|p| p - from));
    StatefulWidget::render(table, area, buf, &mut ts);
}

/// The services above `a` the table lists (the filter may leave some).
fn above_count(state: &State, s: &Snapshot, order: &[usize], a: usize) -> usize {
    if state.filter.is_empty() {
        order.len().saturating_sub(1)
    } else {
        let hops = crate::state::above(s, a);
        hops.iter().filter(|&&h| h != usize::MAX && h > 0).count()
    }
}

fn sort_title(state: &State) -> Option<&'static str> {
    use crate::state::SortKey;
    match state.sort {
        SortKey::Depth => Some("depth"),
        SortKey::Rps => Some("rps"),
        SortKey::Amplification => Some("amp"),
        SortKey::Errors => Some("err%"),
        SortKey::Retries => Some("retries"),
        SortKey::Suppressed => Some("suppressed"),
        SortKey::Storm => None,
    }
}
