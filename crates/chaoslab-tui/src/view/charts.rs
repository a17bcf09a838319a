//! The charts: the selected service's amplification over the chosen
//! window with the model's figure as a reference line, and under it the
//! entry's rate and availability as sparklines. When some service has
//! workers the main chart is the end user's instead: goodput against the
//! offered rate, with the model's recovery threshold as the reference
//! line, and the selected service's amplification turns a sparkline (see
//! [`goodput`]).

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Block, BorderType, Chart, Dataset, GraphType, Sparkline, Widget};

use super::format;
use super::theme;
use crate::lab::figures::Figure;
use crate::lab::Snapshot;
use crate::state::{Focus, State};

mod goodput;

/// Draws the charts panel.
pub fn render(state: &State, s: &Snapshot, area: Rect, buf: &mut Buffer) {
    if super::has_workers(s) {
        goodput::render(state, s, area, buf);
        return;
    }
    let window = state.window_secs();
    let Some(v) = s.services.get(state.selected) else {
        return;
    };
    let model = format::amp(Some(v.live[Figure::ModelAmplification]));
    let title = if area.width >= 60 {
        Line::from(vec![
            Span::styled(
                " amplification of ",
                Style::new().add_modifier(Modifier::BOLD),
            ),
            Span::styled(v.name.clone(), Style::new().add_modifier(Modifier::BOLD)),
            Span::styled(format!(" · last {window} s (< >) · model "), theme::label()),
            Span::styled(model, theme::figure()),
            Span::raw(" "),
        ])
    } else {
        Line::from(vec![
            Span::styled(" amp ", Style::new().add_modifier(Modifier::BOLD)),
            Span::styled(v.name.clone(), Style::new().add_modifier(Modifier::BOLD)),
            Span::styled(format!(" · {window} s · model "), theme::label()),
            Span::styled(model, theme::figure()),
            Span::raw(" "),
        ])
    };
    let block = Block::bordered()
        .border_type(BorderType::Rounded)
        .border_style(theme::border(state.focus == Focus::Charts))
        .title(title);
    let inner = block.inner(area);
    block.render(area, buf);
    if inner.height == 0 || inner.width < 10 {
        return;
    }
    let spark_lines = if inner.height >= 7 { 2 } else { 0 };
    let [top, bottom] =
        Layout::vertical([Constraint::Min(1), Constraint::Length(spark_lines)]).areas(inner);
    let hist = tail(&v.history, window);
    if top.height >= 5 {
        amp_chart(hist, v.live[Figure::ModelAmplification], window, top, buf);
    } else {
        let data: Vec<u64> = hist.iter().map(|a| (a * 100.0).round() as u64).collect();
        spark_row(
            "amp",
            &data,
            None,
            &format::amp(v.amplification()),
            top,
            buf,
            Color::Red,
        );
    }
    if spark_lines > 0 {
        let [a, b] = Layout::vertical([Constraint::Length(1); 2]).areas(bottom);
        let rps: Vec<u64> = tail(&s.root.rps_history, window)
            .iter()
            .map(|r| r.round() as u64)
            .collect();
        spark_row(
            "entry rps",
            &rps,
            None,
            &format!("{:.0}", s.root.rps),
            a,
            buf,
            Color::Cyan,
        );
        availability_row(s, window, b, buf);
    }
}

/// The root availability sparkline over the window, on one row.
pub(super) fn availability_row(s: &Snapshot, window: usize, area: Rect, buf: &mut Buffer) {
    let av: Vec<u64> = tail(&s.root.availability_history, window)
        .iter()
        // A second in which no root request ended is drawn full: the
        // chart shows failures, and there were none to show.
        .map(|a| {
            if a.is_nan() {
                1000
            } else {
                (a * 1000.0).round() as u64
            }
        })
        .collect();
    spark_row(
        "availability",
        &av,
        Some(1000),
        &format::availability(s.root.availability),
        area,
        buf,
        Color::Green,
    );
}

/// The x axis of a chart over the last `window` seconds.
pub(super) fn time_axis(window: usize) -> Axis<'static> {
    Axis::default()
        .bounds([-(window as f64), 0.0])
        .labels([
            format!("-{window}s"),
            format!("-{}s", window / 2),
            "now".into(),
        ])
        .style(theme::label())
}

pub(super) fn tail(v: &[f64], n: usize) -> &[f64] {
    &v[v.len().saturating_sub(n)..]
}

fn amp_chart(hist: &[f64], model: f64, window: usize, area: Rect, buf: &mut Buffer) {
    let n = hist.len();
    let data: Vec<(f64, f64)> = hist
        .iter()
        .enumerate()
        .map(|(i, a)| (i as f64 + 1.0 - n as f64, *a))
        .collect();
    let top = hist.iter().copied().fold(model, f64::max).max(1.0);
    let ymax = nice_ceiling(top * 1.15);
    let w = window as f64;
    let model_line = [(-w, model), (0.0, model)];
    let chart = Chart::new(vec![
        Dataset::default()
            .marker(Marker::Braille)
            .graph_type(GraphType::Line)
            .style(Style::new().fg(Color::DarkGray))
            .data(&model_line),
        Dataset::default()
            .marker(Marker::HalfBlock)
            .graph_type(GraphType::Line)
            .style(Style::new().fg(Color::Red).add_modifier(Modifier::BOLD))
            .data(&data),
    ])
    .x_axis(time_axis(window))
    .y_axis(
        Axis::default()
            .bounds([0.0, ymax])
            .labels([
                "0×".to_string(),
                format!("{}×", trim(ymax / 2.0)),
                format!("{}×", trim(ymax)),
            ])
            .style(theme::label()),
    )
    .legend_position(None);
    chart.render(area, buf);
}

pub(super) fn trim(x: f64) -> String {
    let s = format!("{x:.1}");
    s.strip_suffix(".0").map_or(s.clone(), str::to_string)
}

/// 1, 2, 2.5, 5 × a power of ten at or above `x`.
pub(super) fn nice_ceiling(x: f64) -> f64 {
    let p = 10f64.powf(x.log10().floor());
    for m in [1.0, 2.0, 2.5, 5.0, 10.0] {
        if m * p >= x - 1e-9 {
            return m * p;
        }
    }
    10.0 * p
}

pub(super) fn spark_row(
    label: &str,
    data: &[u64],
    max: Option<u64>,
    value: &str,
    area: Rect,
    buf: &mut Buffer,
    color: Color,
) {
    let lw = 13u16.min(area.width / 3);
    let vw = 9u16.min(area.width / 4);
    let [l, g, r] = Layout::horizontal([
        Constraint::Length(lw),
        Constraint::Min(1),
        Constraint::Length(vw),
    ])
    .areas(area);
    Line::from(Span::styled(label.to_string(), theme::label())).render(l, buf);
    // The newest points, right-aligned like the chart above.
    let shown = &data[data.len().saturating_sub(g.width as usize)..];
    let pad = g.width as usize - shown.len();
    let g = Rect {
        x: g.x + pad as u16,
        width: shown.len() as u16,
        ..g
    };
    let mut sp = Sparkline::default()
        .data(shown)
        .style(Style::new().fg(color));
    if let Some(m) = max {
        sp = sp.max(m);
    }
    sp.render(g, buf);
    Line::from(Span::styled(value.to_string(), theme::figure()))
        .right_aligned()
        .render(r, buf);
}

#[cfg(test)]
mod tests {
    use super::nice_ceiling;

    #[test]
    fn chart_ceilings_are_round() {
        assert_eq!(nice_ceiling(9.2), 10.0);
        assert_eq!(nice_ceiling(1.15), 2.0);
        assert_eq!(nice_ceiling(1.265), 2.0);
        assert_eq!(nice_ceiling(4.6), 5.0);
        assert_eq!(nice_ceiling(21.0), 25.0);
    }
}
