//! The end user's chart for a fleet with workers: goodput (root requests
//! per second that succeeded) against the rate offered, one point a
//! second, with the model's recovery threshold under the policy in force
//! as a reference line. A metastable failure reads at a glance: the
//! offered rate is back to normal, above the threshold, and goodput stays
//! on the floor. Under it, the selected service's amplification and the
//! availability as sparklines.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Block, BorderType, Chart, Dataset, GraphType, Widget};

use super::super::{format, theme};
use super::{spark_row, tail, trim};
use crate::lab::Snapshot;
use crate::state::{Focus, State};

fn offered_style() -> Style {
    Style::new().fg(Color::Cyan)
}

fn goodput_style() -> Style {
    Style::new().fg(Color::Green).add_modifier(Modifier::BOLD)
}

/// Draws the panel.
pub fn render(state: &State, s: &Snapshot, area: Rect, buf: &mut Buffer) {
    let window = state.window_secs();
    let threshold = s.recovery_threshold.filter(|t| t.is_finite());
    let mut title = vec![
        Span::styled(" goodput", goodput_style()),
        Span::styled(" vs ", Style::new().add_modifier(Modifier::BOLD)),
        Span::styled("offered", offered_style().add_modifier(Modifier::BOLD)),
    ];
    if area.width >= 60 {
        title.push(Span::styled(
            format!(" · last {window} s (< >)"),
            theme::label(),
        ));
    }
    if let Some(t) = threshold {
        title.push(Span::styled(" · threshold ", theme::label()));
        title.push(Span::styled(format!("{t:.0}"), theme::figure()));
    }
    title.push(Span::raw(" "));
    let block = Block::bordered()
        .border_type(BorderType::Rounded)
        .border_style(theme::border(state.focus == Focus::Charts))
        .title(Line::from(title));
    let inner = block.inner(area);
    block.render(area, buf);
    if inner.height == 0 || inner.width < 10 {
        return;
    }
    let spark_lines = if inner.height >= 7 { 2 } else { 0 };
    let [top, bottom] =
        Layout::vertical([Constraint::Min(1), Constraint::Length(spark_lines)]).areas(inner);
    let goodput = tail(&s.root.goodput_history, window);
    let offered = tail(&s.root.offered_history, window);
    if top.height >= 5 {
        chart(goodput, offered, threshold, window, top, buf);
    } else {
        let data: Vec<u64> = goodput.iter().map(|r| r.round() as u64).collect();
        let most = offered.iter().copied().fold(s.state.rps, f64::max);
        spark_row(
            "goodput",
            &data,
            Some(most.round() as u64),
            &format!("{:.0}", s.root.goodput_rps),
            top,
            buf,
            Color::Green,
        );
    }
    if spark_lines > 0 {
        let [a, b] = Layout::vertical([Constraint::Length(1); 2]).areas(bottom);
        if let Some(v) = s.services.get(state.selected) {
            let amp: Vec<u64> = tail(&v.history, window)
                .iter()
                .map(|a| (a * 100.0).round() as u64)
                .collect();
            spark_row(
                &format!("amp {}", v.name),
                &amp,
                None,
                &format::amp(v.amplification()),
                a,
                buf,
                Color::Red,
            );
        }
        super::availability_row(s, window, b, buf);
    }
}

/// 1, 1.5, 2, 2.5, 3, 4, 5, 6 or 8 × a power of ten at or above `x`:
/// rates fill more of the chart than amplifications need to.
fn ceiling(x: f64) -> f64 {
    let p = 10f64.powf(x.log10().floor());
    for m in [1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0] {
        if m * p >= x - 1e-9 {
            return m * p;
        }
    }
    10.0 * p
}

fn points(v: &[f64]) -> Vec<(f64, f64)> {
    let n = v.len();
    v.iter()
        .enumerate()
        .map(|(i, r)| (i as f64 + 1.0 - n as f64, *r))
        .collect()
}

fn chart(
    goodput: &[f64],
    offered: &[f64],
    threshold: Option<f64>,
    window: usize,
    area: Rect,
    buf: &mut Buffer,
) {
    let w = window as f64;
    let top = goodput
        .iter()
        .chain(offered)
        .chain(&threshold)
        .copied()
        .fold(1.0, f64::max);
    let ymax = ceiling(top * 1.1);
    let line = threshold.map(|t| [(-w, t), (0.0, t)]);
    let (g, o) = (points(goodput), points(offered));
    let mut sets = vec![];
    if let Some(line) = &line {
        sets.push(
            Dataset::default()
                .marker(Marker::Dot)
                .graph_type(GraphType::Line)
                .style(Style::new().fg(Color::DarkGray))
                .data(line),
        );
    }
    sets.push(
        Dataset::default()
            .marker(Marker::Braille)
            .graph_type(GraphType::Line)
            .style(offered_style())
            .data(&o),
    );
    sets.push(
        Dataset::default()
            .marker(Marker::HalfBlock)
            .graph_type(GraphType::Line)
            .style(goodput_style())
            .data(&g),
    );
    Chart::new(sets)
        .x_axis(super::time_axis(window))
        .y_axis(
            Axis::default()
                .bounds([0.0, ymax])
                .labels(["0".to_string(), trim(ymax / 2.0), trim(ymax)])
                .style(theme::label()),
        )
        .legend_position(None)
        .render(area, buf);
}

#[cfg(test)]
mod tests {
    use super::ceiling;

    #[test]
    fn rate_ceilings_are_round_and_close() {
        assert_eq!(ceiling(330.0), 400.0);
        assert_eq!(ceiling(132.0), 150.0);
        assert_eq!(ceiling(1.1), 1.5);
        assert_eq!(ceiling(61.0), 80.0);
    }
}
