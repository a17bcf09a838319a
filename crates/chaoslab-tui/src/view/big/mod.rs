//! `--big`: the dashboard for the back of the room. A projected terminal
//! shows a lecture hall about a third of what a laptop shows its owner, so
//! this layout keeps the one figure that matters per service and draws it
//! large:
//!
//! - the header: the topology, the policy and the storm radius (the
//!   policy and the radius in [`font`]'s block glyphs when there is room);
//! - the services as boxes in depth order, wrapping into rows, each filled
//!   with its state's colour, its name and its amplification (`8.00×`) in
//!   block glyphs, an arrow from the box before when that one calls it
//!   (red while it retries), and the callers the arrows cannot show under
//!   it; the rows scroll to keep the selected service in sight; a service
//!   with workers adds how busy it is and its queue under its box
//!   (` 100% busy · q 812▲ `), in the colours of the full layout's bar;
//! - the service table cut to name, amplification, model and state, plus
//!   utilisation and queue when some service has workers;
//! - the charts across the whole width when lines are left, no event log.
//!
//! The keys, the footer and the help are those of the full layout. When a
//! terminal cannot hold one box, [`render`] says so and the full layout,
//! which degrades further, is drawn instead.

pub mod font;

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{
    Block, BorderType, Cell, HighlightSpacing, Paragraph, Row, StatefulWidget, Table, TableState,
    Widget,
};

use super::{capacity, charts, footer, format, has_workers, header, help, table, theme};
use crate::lab::figures::Figure;
use crate::lab::{LabState, Snapshot};
use crate::state::{Focus, State};

/// Columns before each box, for the arrow from the box before it.
const GUTTER: u16 = 3;
/// Lines a box takes: its borders and a line of big glyphs.
const BOX_H: u16 = font::HEIGHT + 2;
/// Widest name drawn in big glyphs (three characters); longer names are
/// written in the box's border instead.
const BIG_NAME_MAX: u16 = 11;
/// Columns between a box's name and its amplification.
const NAME_GAP: u16 = 3;
/// The widest amplification in big glyphs (`8.00×`, `12.3×`), so boxes
/// keep their width while the figures change.
const AMP_W: u16 = 17;
/// Lines the charts need to be worth drawing.
const CHARTS_MIN: u16 = 8;
/// Terminal lines from which the header's policy and radius are big.
const BIG_HEADER_FROM: u16 = 30;

/// Draws the big layout into `area` and returns `true`, or returns
/// `false` having drawn nothing when the area cannot hold a box.
pub fn render(state: &State, s: &Snapshot, area: Rect, buf: &mut Buffer) -> bool {
    let (ids, mesh) = box_order(state, s);
    let Some(boxes) = Boxes::new(s, ids, area.width.saturating_sub(2)) else {
        return false;
    };
    let controls = state.controls(s);
    let big_head = area.height >= BIG_HEADER_FROM && big_header_width(&controls) <= area.width;
    let head_h = if big_head { font::HEIGHT } else { 1 } + u16::from(!s.saturation.is_empty());
    let rest = area.height.saturating_sub(head_h + 1);
    if rest < BOX_H + 2 {
        return false;
    }
    // The boxes first, then the table, then the charts if lines are left.
    let topo_want = boxes.height() + 2;
    let table_want = table::height(s);
    let topo_h = topo_want
        .min(rest.saturating_sub(table_want).max(BOX_H + 2))
        .min(rest);
    // Whole rows of boxes: the lines under the last go to the table.
    let topo_h = (topo_h - 2) / BOX_H * BOX_H + 2;
    let mut table_h = table_want.min(rest - topo_h);
    if table_h < 4 {
        table_h = 0;
    }
    let mut bottom_h = rest - topo_h - table_h;
    if bottom_h < CHARTS_MIN {
        bottom_h = 0;
    }
    let [head_a, topo_a, table_a, bottom_a, _, foot_a] = Layout::vertical([
        Constraint::Length(head_h),
        Constraint::Length(topo_h),
        Constraint::Length(table_h),
        Constraint::Length(bottom_h),
        Constraint::Fill(1),
        Constraint::Length(1),
    ])
    .areas(area);

    draw_header(s, &controls, big_head, head_a, buf);

    let shown = boxes.shown_rows(topo_h.saturating_sub(2), state.selected);
    let mut topo_block = Block::bordered()
        .border_type(BorderType::Rounded)
        .border_style(theme::border(state.focus == Focus::Topology))
        .title(Line::from(Span::styled(
            " topology ",
            Style::new().add_modifier(Modifier::BOLD),
        )));
    if shown.len() < boxes.rows() {
        let first = shown.start * boxes.per_row + 1;
        let last = (shown.end * boxes.per_row).min(boxes.ids.len());
        let shown = if first == last {
            first.to_string()
        } else {
            format!("{first}–{last}")
        };
        topo_block = topo_block.title_bottom(
            Line::from(Span::styled(
                format!(
                    " {shown} of {} in {} order ",
                    boxes.ids.len(),
                    if mesh { "the table's" } else { "depth" }
                ),
                theme::label(),
            ))
            .right_aligned(),
        );
    }
    let topo_inner = topo_block.inner(topo_a);
    topo_block.render(topo_a, buf);
    boxes.render(s, state.selected, shown, topo_inner, buf);

    if table_h > 0 {
        draw_table(state, s, table_a, buf);
    }
    if bottom_h > 0 {
        charts::render(state, s, bottom_a, buf);
    }
    let capacity = has_workers(s);
    footer::line(area.width, capacity).render(foot_a, buf);
    if state.help {
        help::render(area, buf, capacity, &state.listening);
    }
    true
}

/// The services the boxes show, in order, and whether that is the
/// table's: a mesh of thousands in depth order would open on its healthy
/// entries, so its boxes follow the table (the storm's services first,
/// the filter and the ancestry applied); a fleet of a few is drawn in
/// depth order.
pub(super) fn box_order(state: &State, s: &Snapshot) -> (Vec<usize>, bool) {
    if super::callers::is_mesh(s) {
        return (state.order(s), true);
    }
    let mut ids: Vec<usize> = (0..s.services.len()).collect();
    ids.sort_by_key(|&i| s.services[i].depth);
    (ids, false)
}

/// The policy's name as the header writes it.
fn policy_name(c: &LabState) -> String {
    c.policy.name().to_uppercase()
}

/// Columns the big header takes: the title, the policy in big glyphs, the
/// radius label and a two-digit radius in big glyphs.
fn big_header_width(c: &LabState) -> u16 {
    match font::width(&policy_name(c)) {
        Some(w) => TITLE_W + w + 4 + RADIUS_LABEL.len() as u16 + 8,
        None => u16::MAX,
    }
}

/// Columns left of the big policy: ` chaoslab ` and the topology's name
/// fit in them when it is short; the status goes under them.
const TITLE_W: u16 = 28;
const RADIUS_LABEL: &str = "storm radius ";

/// The header: the topology, the policy and the storm radius.
fn draw_header(s: &Snapshot, c: &LabState, big: bool, area: Rect, buf: &mut Buffer) {
    let title = vec![
        Span::styled(
            " chaoslab ",
            Style::new().add_modifier(Modifier::REVERSED | Modifier::BOLD),
        ),
        Span::raw(" "),
        Span::styled(s.topology.clone(), theme::figure()),
    ];
    let status = if c.paused {
        Span::styled(" PAUSED ", theme::warn().add_modifier(Modifier::REVERSED))
    } else {
        Span::styled("● running", theme::good())
    };
    let run = vec![
        Span::raw(" "),
        status,
        Span::raw("  "),
        Span::styled(format::uptime(s.t), theme::figure()),
    ];
    let radius_style = if s.radius_max > 1 {
        theme::alarm()
    } else {
        theme::figure()
    };
    let radius = s.radius_max.to_string();
    let saturated = header::lines(s, c, area.width)
        .pop()
        .filter(|_| !s.saturation.is_empty());
    if !big {
        let figures = vec![
            Span::raw("   "),
            Span::styled(format!(" {} ", policy_name(c)), theme::policy(&c.policy)),
            Span::raw("   "),
            Span::styled(RADIUS_LABEL, theme::label()),
            Span::styled(radius, radius_style),
        ];
        let full =
            Line::from([title.clone(), figures.clone(), vec![Span::raw("  ")], run].concat());
        // Narrow: the topology, the policy and the radius, nothing else.
        let line = if full.width() <= usize::from(area.width) {
            full
        } else {
            Line::from([vec![Span::raw(" ")], title[2..].to_vec(), figures].concat())
        };
        let mut lines = vec![line];
        lines.extend(saturated);
        Paragraph::new(lines).render(area, buf);
        return;
    }
    let mut lines = vec![Line::from(title), Line::from(run), Line::default()];
    lines.extend(saturated);
    Paragraph::new(lines).render(area, buf);
    // The policy in its colour (not reversed: a reversed glyph is a hole).
    let policy = policy_name(c);
    let x = area.x + TITLE_W;
    let policy_style = Style::new()
        .fg(theme::policy(&c.policy).fg.unwrap_or_default())
        .add_modifier(Modifier::BOLD);
    font::draw(buf, x, area.y, &policy, policy_style, area);
    let x = x + font::width(&policy).unwrap_or(0) + 4;
    let label = Rect::new(x, area.y + 1, RADIUS_LABEL.len() as u16, 1).intersection(area);
    Span::styled(RADIUS_LABEL, theme::label()).render(label, buf);
    font::draw(
        buf,
        x + RADIUS_LABEL.len() as u16,
        area.y,
        &radius,
        radius_style.add_modifier(Modifier::BOLD),
        area,
    );
}

/// The services as big boxes, wrapped into rows.
struct Boxes {
    /// Services in the order drawn: depth order (topology order within a
    /// depth), or the table's on a mesh.
    ids: Vec<usize>,
    /// Names are drawn in big glyphs (every name has them and is short).
    big_names: bool,
    /// Columns of the widest big name.
    name_w: u16,
    /// A box's width, borders included.
    box_w: u16,
    /// Boxes in a row.
    per_row: usize,
}

impl Boxes {
    /// The boxes of `ids`, in that order, for `width` columns, or `None`
    /// if not one fits.
    fn new(s: &Snapshot, ids: Vec<usize>, width: u16) -> Option<Boxes> {
        let name_w = ids
            .iter()
            .map(|&i| font::width(&s.services[i].name).filter(|&w| w <= BIG_NAME_MAX))
            .try_fold(0, |m, w| w.map(|w| w.max(m)));
        let inner = |names: bool| {
            let name = if names {
                name_w.unwrap_or(0) + NAME_GAP
            } else {
                0
            };
            1 + name + AMP_W + 1
        };
        let big_names = name_w.is_some() && inner(true) + 2 + GUTTER <= width;
        let box_w = inner(big_names) + 2;
        if box_w + GUTTER > width || ids.is_empty() {
            return None;
        }
        Some(Boxes {
            ids,
            big_names,
            name_w: name_w.unwrap_or(0),
            box_w,
            per_row: usize::from(width / (box_w + GUTTER)),
        })
    }

    /// Rows of boxes.
    fn rows(&self) -> usize {
        self.ids.len().div_ceil(self.per_row)
    }

    /// Lines every row takes.
    fn height(&self) -> u16 {
        self.rows() as u16 * BOX_H
    }

    /// The rows that fit in `lines`, scrolled to keep `selected` in sight.
    fn shown_rows(&self, lines: u16, selected: usize) -> std::ops::Range<usize> {
        let fit = usize::from(lines / BOX_H).clamp(1, self.rows());
        let row = self
            .ids
            .iter()
            .position(|&i| i == selected)
            .map_or(0, |p| p / self.per_row);
        let first = (row + 1).saturating_sub(fit);
        first..first + fit
    }

    fn render(
        &self,
        s: &Snapshot,
        selected: usize,
        rows: std::ops::Range<usize>,
        area: Rect,
        buf: &mut Buffer,
    ) {
        // The grid centred in the panel.
        let used = self.per_row.min(self.ids.len()) as u16 * (self.box_w + GUTTER);
        let left = area.x + area.width.saturating_sub(used) / 2;
        for (k, &id) in self.ids.iter().enumerate() {
            let row = k / self.per_row;
            if !rows.contains(&row) {
                continue;
            }
            let col = (k % self.per_row) as u16;
            let x = left + col * (self.box_w + GUTTER);
            let y = area.y + (row - rows.start) as u16 * BOX_H;
            let cell = Rect::new(x, y, self.box_w + GUTTER, BOX_H);
            if cell.intersection(area) != cell {
                continue;
            }
            let prev = k.checked_sub(1).map(|p| self.ids[p]);
            self.draw_arrow(s, prev, id, x, y + BOX_H / 2, buf);
            let r = Rect::new(x + GUTTER, y, self.box_w, BOX_H);
            self.draw_box(s, id, id == selected, prev, r, buf);
        }
    }

    /// `──▶` into a box from the box before it, when that one calls it;
    /// red while the call retries.
    fn draw_arrow(
        &self,
        s: &Snapshot,
        prev: Option<usize>,
        id: usize,
        x: u16,
        y: u16,
        buf: &mut Buffer,
    ) {
        let Some(edge) = prev.and_then(|p| s.edges.iter().find(|e| e.from == p && e.to == id))
        else {
            return;
        };
        let style = if edge.retry_rps >= 0.05 {
            theme::alarm()
        } else {
            theme::border(false)
        };
        Span::styled("──▶", style).render(Rect::new(x, y, GUTTER, 1), buf);
    }

    fn draw_box(
        &self,
        s: &Snapshot,
        id: usize,
        selected: bool,
        prev: Option<usize>,
        r: Rect,
        buf: &mut Buffer,
    ) {
        let v = &s.services[id];
        let fill = theme::pill(v.state);
        let g = theme::glyph(v.state);
        let mut title = if self.big_names {
            format!(" {g} ")
        } else {
            format!(" {g} {} ", v.name)
        };
        if selected {
            title = format!("▶{title}◀");
        }
        // The callers an arrow does not show.
        let callers: Vec<&str> = s
            .edges
            .iter()
            .filter(|e| e.to == id && Some(e.from) != prev)
            .map(|e| s.services[e.from].name.as_str())
            .collect();
        let callers = (!callers.is_empty()).then(|| format!(" ← {} ", callers.join(", ")));
        let mut block = Block::bordered()
            .border_type(if selected {
                BorderType::Thick
            } else {
                BorderType::Rounded
            })
            .style(fill)
            .title(Span::styled(title, fill.add_modifier(Modifier::BOLD)));
        if let Some(c) = &callers {
            block = block.title_bottom(c.clone());
        }
        if let Some(w) = capacity::workers(s, id) {
            // The long form where it fits beside the callers, else the
            // short one, else none (the table has it).
            let room = usize::from(r.width.saturating_sub(2))
                .saturating_sub(callers.as_ref().map_or(0, |c| c.chars().count()))
                .saturating_sub(1);
            let (pct, q) = (capacity::percent(v), capacity::depth(v, w));
            let (pct, q) = (pct.trim_start(), q.trim_end());
            let busy = [format!(" {pct} busy · q {q} "), format!(" {pct} q{q} ")]
                .into_iter()
                .find(|l| l.chars().count() <= room);
            if let Some(busy) = busy {
                block = block.title_bottom(
                    Line::from(Span::styled(
                        busy,
                        capacity::style(v, w).add_modifier(Modifier::REVERSED),
                    ))
                    .right_aligned(),
                );
            }
        }
        let inner = block.inner(r);
        block.render(r, buf);
        let bold = fill.add_modifier(Modifier::BOLD);
        let mut x = inner.x + 1;
        if self.big_names {
            font::draw(buf, x, inner.y, &v.name, bold, inner);
            x += self.name_w + NAME_GAP;
        }
        let amp = format::amp(v.amplification());
        match font::width(&amp) {
            Some(w) => font::draw(buf, x + AMP_W.saturating_sub(w), inner.y, &amp, bold, inner),
            None => {
                let a = Rect::new(x, inner.y + 1, AMP_W, 1).intersection(inner);
                Line::from(Span::styled(amp, bold))
                    .right_aligned()
                    .render(a, buf);
            }
        }
    }
}

/// The service table cut to what a room reads: name, amplification,
/// model and state (and utilisation and queue on a fleet with workers),
/// in the table's order and selection.
fn draw_table(state: &State, s: &Snapshot, area: Rect, buf: &mut Buffer) {
    let workers = has_workers(s);
    let order = state.order(s);
    let head = |t: &'static str| {
        Line::from(Span::styled(
            t,
            Style::new().add_modifier(Modifier::BOLD | Modifier::UNDERLINED),
        ))
    };
    let mut heads = vec![
        Cell::from(head("service")),
        Cell::from(head("amp").right_aligned()),
        Cell::from(head("model").right_aligned()),
    ];
    if workers {
        heads.push(Cell::from(head("util")));
        heads.push(Cell::from(head("queue").right_aligned()));
    }
    heads.push(Cell::from(head("state")));
    let header = Row::new(heads);
    let rows = order.iter().map(|&id| {
        let v = &s.services[id];
        let (amp, amp_style) = table::amp_text(v);
        let mut cells = vec![
            Cell::from(Span::styled(
                format!("{} {}", theme::glyph(v.state), v.name),
                theme::text(v.state),
            )),
            Cell::from(Line::from(Span::styled(amp, amp_style)).right_aligned()),
            Cell::from(
                Line::from(Span::styled(
                    format::amp(Some(v.live[Figure::ModelAmplification])),
                    theme::label(),
                ))
                .right_aligned(),
            ),
        ];
        if workers {
            let w = capacity::workers(s, id);
            let (util, util_style) = capacity::util_cell(v, w);
            let (queue, queue_style) = capacity::queue_cell(v, w);
            cells.push(Cell::from(Span::styled(util, util_style)));
            cells.push(Cell::from(
                Line::from(Span::styled(queue, queue_style)).right_aligned(),
            ));
        }
        cells.push(Cell::from(Span::styled(
            theme::meaning(v.state),
            theme::text(v.state),
        )));
        Row::new(cells)
    });
    let name_w = s
        .services
        .iter()
        .map(|v| v.name.chars().count() + 2)
        .max()
        .unwrap_or(0)
        .max(7) as u16;
    let mut widths = vec![
        Constraint::Length(name_w),
        Constraint::Length(7),
        Constraint::Length(7),
    ];
    if workers {
        widths.extend([Constraint::Length(10), Constraint::Length(6)]);
    }
    widths.push(Constraint::Fill(1));
    let table = Table::new(rows, widths)
        .header(header)
        .column_spacing(3)
        .block(
            Block::bordered()
                .border_type(BorderType::Rounded)
                .border_style(theme::border(state.focus == Focus::Table))
                .title(Line::from(vec![
                    Span::styled(" services ", Style::new().add_modifier(Modifier::BOLD)),
                    Span::styled(
                        format!("· sorted by {} (s) ", state.sort.name()),
                        theme::label(),
                    ),
                ])),
        )
        .row_highlight_style(theme::selected())
        .highlight_symbol("▶ ")
        .highlight_spacing(HighlightSpacing::Always);
    let mut ts = TableState::default();
    ts.select(order.iter().position(|&i| i == state.selected));
    StatefulWidget::render(table, area, buf, &mut ts);
}
