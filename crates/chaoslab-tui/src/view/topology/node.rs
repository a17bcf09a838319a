//! The nodes of the topology view: each service a pill coloured by its
//! state (its name, amplification and rate), a dim `↪ name` for a second
//! arrow to a service drawn elsewhere, and, for a service with workers,
//! how busy it is: a utilisation bar and its queue, red when saturated.

use ratatui::style::{Modifier, Style};

use super::super::{capacity, format, theme};
use super::canvas::Canvas;
use super::{pad, truncate, GraphLayout, Kind};
use crate::lab::figures::Figure;
use crate::lab::Snapshot;

impl GraphLayout {
    pub(super) fn draw_nodes(&self, s: &Snapshot, selected: usize, c: &mut Canvas) {
        let w = self.node_w as usize;
        for it in &self.grid.items {
            let x = self.x(it.col);
            let y = self.y(it);
            match it.kind {
                Kind::Ref(id) => {
                    let name = truncate(&s.services[id].name, self.name_w);
                    let text = pad(&format!(" ↪ {name}"), w);
                    c.text(x, y, &text, Style::new().add_modifier(Modifier::DIM));
                }
                Kind::Node(id) => {
                    let v = &s.services[id];
                    let mut style = theme::pill(v.state);
                    if id == selected {
                        style = style.add_modifier(Modifier::REVERSED | Modifier::BOLD);
                    }
                    let g = theme::glyph(v.state);
                    let name = truncate(&v.name, self.name_w);
                    let amp = format::amp(v.amplification());
                    if self.tall {
                        let nw = w - 4;
                        c.text(x, y - 1, &pad(&format!(" {g} {name:<nw$}"), w), style);
                        c.text(
                            x,
                            y,
                            &pad(&format!("   {amp:>5}"), w),
                            style.add_modifier(Modifier::BOLD),
                        );
                        let rps = format!("{}/s", format::rate_short(v.live[Figure::Rps]));
                        c.text(x, y + 1, &pad(&format!("   {rps:>5}"), w), style);
                    } else {
                        let nw = self.name_w;
                        c.text(x, y, &format!(" {g} {name:<nw$} {amp:>5} "), style);
                    }
                    if self.capacity {
                        self.draw_capacity(s, id, x, y, c);
                    }
                }
            }
        }
    }

    /// A service's utilisation bar and queue: after its pill when compact
    /// (`▕█████▏100% q 1000▲`), as two lines under it when tall (a bar the
    /// node's width, then `100%  q 1000▲`).
    fn draw_capacity(&self, s: &Snapshot, id: usize, x: u16, y: u16, c: &mut Canvas) {
        let Some(workers) = capacity::workers(s, id) else {
            return;
        };
        let v = &s.services[id];
        let style = capacity::style(v, workers);
        let (pct, queue) = (capacity::percent(v), capacity::queue(v, workers));
        let u = v.live[Figure::Utilisation];
        if self.tall {
            let w = self.node_w as usize;
            c.text(x, y + 2, &capacity::bar(u, w - 2), style);
            c.text(x, y + 3, &pad(&format!(" {pct}  {queue}"), w), style);
        } else {
            let pill = self.name_w as u16 + 10;
            let text = format!(" {}{pct} {queue}", capacity::bar(u, 5));
            c.text(x + pill, y, &pad(&text, super::CAP_COMPACT as usize), style);
        }
    }
}
