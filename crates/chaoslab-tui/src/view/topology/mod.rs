//! The topology view: services laid out by depth, left to right, edges
//! drawn between them, each service a coloured pill, each retrying edge
//! labelled with its retries per second.
//!
//! Layout: a depth-first walk from the entry gives every service a row; a
//! service's first callee shares its row, every further callee opens a
//! new row below everything placed so far. Columns are depths. So a chain
//! is one row, a tree never crosses itself, and each caller's branching
//! line (its *lane*, one column right of it) only ever passes its own
//! callees. A callee reached a second time (a DAG that joins again) is
//! drawn once; the second caller points at a dim `↪ name` reference.
//!
//! When the columns do not fit the width they wrap into *bands* stacked
//! downwards (a chain snakes back to the left margin), and when the bands
//! do not fit the height the view scrolls to keep the selected service in
//! sight. Text never overlaps: every label has its own cells.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};

mod canvas;
mod node;

use canvas::Canvas;

use super::format;
use super::theme;
use crate::lab::snapshot::ServiceState;
use crate::lab::Snapshot;

/// Longest name shown in a pill.
const MAX_NAME: usize = 12;
/// Columns between two depths, compact (label inline, 5 wide).
const GAP_COMPACT: u16 = 8;
/// Columns between two depths, tall (label above the line, 7 wide).
const GAP_TALL: u16 = 10;
/// Columns a compact node adds for its capacity (`▕█████▏100% q 1000▲`).
const CAP_COMPACT: u16 = 20;
/// The least width of a tall node when the fleet has workers.
const CAP_TALL: u16 = 16;
/// Lines a tall node takes: name, amplification, rate; with workers, a
/// utilisation bar and its figures too.
const TALL_LINES: u16 = 3;
/// See [`TALL_LINES`].
const TALL_LINES_CAP: u16 = 5;

/// What sits at a place in the grid.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    /// A service.
    Node(usize),
    /// A second arrow to a service drawn elsewhere.
    Ref(usize),
}

#[derive(Debug, Clone, Copy)]
struct Item {
    kind: Kind,
    col: usize,
    row: usize,
}

#[derive(Debug, Clone, Copy)]
struct GEdge {
    from: usize,
    to: usize,
    retry_rps: f64,
    /// The call's circuit breaker: 0 closed (or none), 1 half-open, 2 open.
    breaker: u64,
}

/// The graph placed on a grid of (depth, row).
#[derive(Debug, Clone)]
struct Grid {
    items: Vec<Item>,
    edges: Vec<GEdge>,
    cols: usize,
}

fn grid(s: &Snapshot) -> Grid {
    let n = s.services.len();
    // Callees in call order, duplicates merged.
    let mut calls: Vec<Vec<(usize, f64, u64)>> = vec![vec![]; n];
    let mut called = vec![false; n];
    for e in &s.edges {
        if e.from >= n || e.to >= n {
            continue;
        }
        called[e.to] = true;
        match calls[e.from].iter_mut().find(|(t, _, _)| *t == e.to) {
            Some((_, r, b)) => {
                *r += e.retry_rps;
                *b = (*b).max(e.breaker);
            }
            None => calls[e.from].push((e.to, e.retry_rps, e.breaker)),
        }
    }
    let mut roots: Vec<usize> = (0..n).filter(|&i| !called[i]).collect();
    roots.sort_by_key(|&i| (s.services[i].depth, i));
    let mut g = Walk {
        s,
        calls: &calls,
        placed: vec![None; n],
        items: vec![],
        edges: vec![],
        rows: 0,
    };
    for r in roots {
        if g.placed[r].is_none() {
            let row = g.alloc();
            g.visit(r, 0, row);
        }
    }
    // Anything unreachable (not expected from a validated topology).
    for i in 0..n {
        if g.placed[i].is_none() {
            let row = g.alloc();
            g.visit(i, 0, row);
        }
    }
    let cols = g.items.iter().map(|it| it.col + 1).max().unwrap_or(0);
    Grid {
        items: g.items,
        edges: g.edges,
        cols,
    }
}

struct Walk<'a> {
    s: &'a Snapshot,
    calls: &'a [Vec<(usize, f64, u64)>],
    placed: Vec<Option<usize>>,
    items: Vec<Item>,
    edges: Vec<GEdge>,
    rows: usize,
}

impl Walk<'_> {
    fn alloc(&mut self) -> usize {
        self.rows += 1;
        self.rows - 1
    }

    fn visit(&mut self, id: usize, min_col: usize, row: usize) -> usize {
        let col = self.s.services[id].depth.max(min_col);
        let me = self.items.len();
        self.items.push(Item {
            kind: Kind::Node(id),
            col,
            row,
        });
        self.placed[id] = Some(me);
        for (k, &(to, retry_rps, breaker)) in self.calls[id].iter().enumerate() {
            let r = if k == 0 { row } else { self.alloc() };
            let target = if self.placed[to].is_some() || self.s.services[to].depth <= col {
                let it = self.items.len();
                self.items.push(Item {
                    kind: Kind::Ref(to),
                    col: col + 1,
                    row: r,
                });
                it
            } else {
                self.visit(to, col + 1, r)
            };
            self.edges.push(GEdge {
                from: me,
                to: target,
                retry_rps,
                breaker,
            });
        }
        me
    }
}

/// The topology laid out for one width: ready to measure and to draw.
#[derive(Debug, Clone)]
pub struct GraphLayout {
    grid: Grid,
    tall: bool,
    /// Some service has workers: nodes show their capacity.
    capacity: bool,
    /// Lines a node takes.
    node_h: u16,
    node_w: u16,
    name_w: usize,
    gap: u16,
    /// Columns per band.
    per_band: usize,
    /// Per band: its distinct rows in order.
    band_rows: Vec<Vec<usize>>,
    /// Per band: its first line.
    band_top: Vec<u16>,
    /// Lines in all.
    height: u16,
    /// Columns left blank to centre a single band.
    left: u16,
}

impl GraphLayout {
    /// Lays out `s` for `width` columns, compact (one line per service)
    /// or tall (three lines per service: name, amplification, rate). When
    /// a service has workers, a compact node is wider (its utilisation
    /// bar and queue follow the pill) and a tall one two lines taller.
    pub fn new(s: &Snapshot, width: u16, tall: bool) -> GraphLayout {
        let grid = grid(s);
        let capacity = super::has_workers(s);
        let name_w = s
            .services
            .iter()
            .map(|v| v.name.chars().count())
            .max()
            .unwrap_or(1)
            .clamp(1, MAX_NAME);
        let (node_w, gap) = match (tall, capacity) {
            (true, false) => (name_w.max(7) as u16 + 4, GAP_TALL),
            (true, true) => ((name_w.max(7) as u16 + 4).max(CAP_TALL), GAP_TALL),
            (false, false) => (name_w as u16 + 10, GAP_COMPACT),
            (false, true) => (name_w as u16 + 10 + CAP_COMPACT, GAP_COMPACT),
        };
        let node_h = match (tall, capacity) {
            (false, _) => 1,
            (true, false) => TALL_LINES,
            (true, true) => TALL_LINES_CAP,
        };
        let cols = grid.cols.max(1);
        let one_band = cols as u16 * node_w + (cols as u16 - 1) * gap;
        let (per_band, left) = if one_band <= width {
            (cols, (width - one_band) / 2)
        } else {
            // Later bands start after a gutter of one gap, and each band
            // ends with a two-column exit stub.
            let fit = (width.saturating_sub(gap + 2) + gap) / (node_w + gap);
            ((fit as usize).clamp(1, cols), 0)
        };
        let bands = cols.div_ceil(per_band);
        let mut band_rows = vec![vec![]; bands];
        for it in &grid.items {
            band_rows[it.col / per_band].push(it.row);
        }
        for r in &mut band_rows {
            r.sort_unstable();
            r.dedup();
        }
        let pitch: u16 = if tall { node_h + 1 } else { 1 };
        let lines = |rows: usize| -> u16 {
            if rows == 0 {
                0
            } else if tall {
                rows as u16 * pitch - 1
            } else {
                rows as u16
            }
        };
        let mut band_top = vec![];
        let mut y = 0u16;
        for r in &band_rows {
            band_top.push(y);
            y += lines(r.len()) + 1;
        }
        GraphLayout {
            grid,
            tall,
            capacity,
            node_h,
            node_w,
            name_w,
            gap,
            per_band,
            band_rows,
            band_top,
            height: y.saturating_sub(1),
            left,
        }
    }

    /// Lines the drawing takes.
    pub fn height(&self) -> u16 {
        self.height
    }

    fn band(&self, col: usize) -> usize {
        col / self.per_band
    }

    fn x(&self, col: usize) -> u16 {
        let b = self.band(col);
        let lc = (col % self.per_band) as u16;
        self.left + (if b > 0 { self.gap } else { 0 }) + lc * (self.node_w + self.gap)
    }

    /// The line an item's edges attach to.
    fn y(&self, it: &Item) -> u16 {
        let b = self.band(it.col);
        let local = self.band_rows[b]
            .iter()
            .position(|&r| r == it.row)
            .unwrap_or(0) as u16;
        let pitch = if self.tall { self.node_h + 1 } else { 1 };
        self.band_top[b] + local * pitch + u16::from(self.tall)
    }

    /// The first column right of a band's widest column.
    fn band_right(&self, b: usize) -> u16 {
        let last = ((b + 1) * self.per_band).min(self.grid.cols.max(1)) - 1;
        self.x(last) + self.node_w + 1
    }

    /// The line under a band (where a chain snakes back).
    fn band_bottom(&self, b: usize) -> u16 {
        self.band_top.get(b + 1).map_or(self.height, |t| t - 1)
    }

    /// The line of `service`'s pill, for scrolling it into sight.
    fn line_of(&self, service: usize) -> Option<(u16, u16)> {
        self.grid
            .items
            .iter()
            .find(|it| it.kind == Kind::Node(service))
            .map(|it| {
                let y = self.y(it);
                if self.tall {
                    (y - 1, self.node_h)
                } else {
                    (y, 1)
                }
            })
    }

    /// Draws into `area`, scrolled so that `selected` is in sight.
    pub fn render(&self, s: &Snapshot, selected: usize, area: Rect, buf: &mut Buffer) {
        if area.is_empty() {
            return;
        }
        let mut c = Canvas::new(area.width, self.height.max(1));
        self.draw_edges(s, &mut c);
        self.draw_nodes(s, selected, &mut c);
        let scroll = match self.line_of(selected) {
            Some((y, h)) if self.height > area.height => {
                let want = (y + h).saturating_sub(area.height.saturating_sub(1));
                want.min(y).min(self.height - area.height)
            }
            _ => 0,
        };
        c.blit(buf, area, scroll);
    }

    fn draw_edges(&self, s: &Snapshot, c: &mut Canvas) {
        let bands = self.band_rows.len();
        // Edges that cross from one band to the next: a lone one snakes.
        let mut crossing = vec![0usize; bands];
        for e in &self.grid.edges {
            let (a, b) = (&self.grid.items[e.from], &self.grid.items[e.to]);
            if self.band(a.col) != self.band(b.col) {
                crossing[self.band(a.col)] += 1;
            }
        }
        let mut order: Vec<&GEdge> = self.grid.edges.iter().collect();
        // Retrying edges last, so their colour wins on shared lines.
        order.sort_by_key(|e| e.retry_rps > 0.0);
        for e in order {
            let (a, b) = (&self.grid.items[e.from], &self.grid.items[e.to]);
            let retrying = e.retry_rps >= 0.05;
            let style = if retrying {
                theme::alarm()
            } else {
                Style::new()
            };
            let (sb, tb) = (self.band(a.col), self.band(b.col));
            let sx = self.x(a.col) + self.out_w(s, a);
            let sy = self.y(a);
            let tx = self.x(b.col);
            let ty = self.y(b);
            if sb == tb {
                let lane = sx + 1;
                if sy == ty {
                    c.h(sy, sx, tx - 1, style);
                } else {
                    c.h(sy, sx, lane, style);
                    c.v(lane, sy, ty, style);
                    c.h(ty, lane, tx - 1, style);
                }
            } else if tb == sb + 1 && crossing[sb] == 1 {
                let right = self.band_right(sb);
                let under = self.band_bottom(sb);
                c.h(sy, sx, right, style);
                c.v(right, sy, under, style);
                c.h(under, 0, right, style);
                c.v(0, under, ty, style);
                c.h(ty, 0, tx - 1, style);
            } else {
                let right = self.band_right(sb);
                c.h(sy, sx, right - 1, style);
                c.text(right, sy, "…", style);
                c.text(0, ty, "…", style);
                c.h(ty, 1, tx - 1, style);
            }
            // The arrow's head says where the call's breaker stands.
            match e.breaker {
                2 => c.text(tx - 1, ty, "⊘", theme::warn()),
                1 => c.text(tx - 1, ty, "◐", theme::warn()),
                _ => c.text(tx - 1, ty, "▶", style),
            }
            if retrying {
                let rate = format::rate_short(e.retry_rps);
                let (label, y) = if self.tall {
                    (format!("↻{rate}/s"), ty - 1)
                } else {
                    (format!("↻{rate}"), ty)
                };
                let w = label.chars().count() as u16;
                c.text(tx - 1 - w, y, &label, style);
            }
        }
    }

    /// Where an item's outgoing edges start, from its left: past its
    /// capacity when compact, or right after the pill of a service with
    /// nothing to show there (no workers).
    fn out_w(&self, s: &Snapshot, it: &Item) -> u16 {
        match it.kind {
            Kind::Node(id)
                if self.capacity
                    && !self.tall
                    && s.state
                        .resources
                        .get(id)
                        .is_none_or(|r| r.workers.is_none()) =>
            {
                self.node_w - CAP_COMPACT
            }
            _ => self.node_w,
        }
    }
}

/// The legend: the states on screen now, and the retry label.
pub fn legend(s: &Snapshot) -> Line<'static> {
    let mut spans = vec![Span::raw(" ")];
    for st in theme::STATES {
        if st == ServiceState::Healthy || s.services.iter().any(|v| v.state == st) {
            spans.push(Span::styled(
                format!(" {} ", theme::glyph(st)),
                theme::pill(st),
            ));
            spans.push(Span::raw(format!(" {}  ", theme::meaning(st))));
        }
    }
    spans.push(Span::styled("↻", theme::alarm()));
    spans.push(Span::raw(" retries/s "));
    if s.edges.iter().any(|e| e.breaker > 0) {
        spans.push(Span::styled(" ⊘", theme::warn()));
        spans.push(Span::raw(" breaker open "));
        spans.push(Span::styled("◐", theme::warn()));
        spans.push(Span::raw(" half-open "));
    }
    Line::from(spans)
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

fn pad(s: &str, w: usize) -> String {
    let n = s.chars().count();
    if n >= w {
        s.chars().take(w).collect()
    } else {
        format!("{s}{}", " ".repeat(w - n))
    }
}

#[cfg(test)]
mod tests;
