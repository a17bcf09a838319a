//! The charts of a page, drawn with `plotters`' SVG backend into a
//! string: lines over time with events marked, and grouped bars.
//!
//! Text is SVG `<text>` (plotters escapes it), sized by plotters' own
//! estimate since no font is loaded: the viewer's sans-serif draws it.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// A chart's width and height, pixels (the page scales it down).
pub const SIZE: (u32, u32) = (1000, 380);

/// The colours of successive lines or bars: distinct on white, and
/// still apart for the commonest colour blindness (Okabe–Ito, then more).
pub const PALETTE: [RGBColor; 10] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
    RGBColor(0, 0, 0),
    RGBColor(120, 94, 240),
    RGBColor(170, 170, 0),
    RGBColor(140, 86, 75),
];

/// The colour of the `k`th line or bar.
pub fn colour(k: usize) -> RGBColor {
    PALETTE[k % PALETTE.len()]
}

/// One line of a [`lines`] chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    /// Its name in the legend.
    pub name: String,
    /// A value per x; NaN breaks the line (nothing measured there).
    pub ys: Vec<f64>,
}

/// A vertical mark on a [`lines`] chart: an event at `x`, labelled.
#[derive(Debug, Clone, PartialEq)]
pub struct Mark {
    /// Where, on the x axis.
    pub x: f64,
    /// What happened (plain text; cut to 48 characters on the chart).
    pub label: String,
}

/// The range `lo..hi` covering `values` (and `floor`), with headroom;
/// `0..1` when there is nothing finite.
fn range(values: impl Iterator<Item = f64>, floor: f64) -> (f64, f64) {
    let (mut lo, mut hi) = (floor, floor);
    let mut any = false;
    for v in values.filter(|v| v.is_finite()) {
        lo = lo.min(v);
        hi = hi.max(v);
        any = true;
    }
    if !any || hi - lo < 1e-9 {
        return (lo, lo + 1.0);
    }
    (lo, hi + (hi - lo) * 0.08)
}

/// Cuts `s` to `n` characters, with an ellipsis when it was longer.
fn cut(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        s.chars().take(n - 1).chain(std::iter::once('…')).collect()
    }
}

/// Lines over `xs` with a legend, each mark a grey vertical line with its
/// label at the top (staggered so neighbours do not overwrite each
/// other). The y axis starts at 0 unless a value is below it.
pub fn lines(
    title: &str,
    x_desc: &str,
    y_desc: &str,
    xs: &[f64],
    lines: &[Line],
    marks: &[Mark],
) -> String {
    let mut svg = String::new();
    let (x0, x1) = match (xs.first(), xs.last()) {
        (Some(&a), Some(&b)) if b > a => (a.min(0.0), b),
        (Some(&a), _) => (a.min(0.0), a.max(0.0) + 1.0),
        _ => (0.0, 1.0),
    };
    let (y0, y1) = range(lines.iter().flat_map(|l| l.ys.iter().copied()), 0.0);
    // Room above the data for the marks' labels.
    let y1 = if marks.is_empty() {
        y1
    } else {
        y1 + (y1 - y0) * 0.25
    };
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        let _ = draw_lines(
            &root,
            title,
            (x_desc, y_desc),
            (x0..x1, y0..y1),
            xs,
            lines,
            marks,
        );
        let _ = root.present();
    }
    svg
}

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;
type Drawn = Result<(), Box<dyn std::error::Error>>;

fn draw_lines(
    root: &Area<'_>,
    title: &str,
    (x_desc, y_desc): (&str, &str),
    (x, y): (std::ops::Range<f64>, std::ops::Range<f64>),
    xs: &[f64],
    lines: &[Line],
    marks: &[Mark],
) -> Drawn {
    root.fill(&WHITE)?;
    let (ytop, ybottom, xmid) = (y.end, y.start, (x.start + x.end) / 2.0);
    let mut chart = frame(root, title).build_cartesian_2d(x, y)?;
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(y_desc)
        .light_line_style(RGBColor(238, 238, 238))
        .label_style(("sans-serif", 13))
        .draw()?;
    let grey = RGBColor(70, 70, 70);
    for (k, m) in marks.iter().enumerate() {
        chart.draw_series(std::iter::once(PathElement::new(
            vec![(m.x, ybottom), (m.x, ytop)],
            grey.stroke_width(2),
        )))?;
        // Labels right of their line in the left half, left of it in the
        // right half; four rows, so close events stay readable.
        let row = (k % 4) as f64;
        let at = (m.x, ytop - (ytop - ybottom) * (0.015 + 0.055 * row));
        let h = if m.x <= xmid { HPos::Left } else { HPos::Right };
        let style = TextStyle::from(("sans-serif", 12).into_font())
            .color(&RGBColor(60, 60, 60))
            .pos(Pos::new(h, VPos::Top));
        chart.draw_series(std::iter::once(Text::new(
            format!(" {} ", cut(&m.label, 48)),
            at,
            style,
        )))?;
    }
    for (k, line) in lines.iter().enumerate() {
        let c = colour(k);
        let mut segments: Vec<Vec<(f64, f64)>> = vec![vec![]];
        for (&x, &y) in xs.iter().zip(&line.ys) {
            if y.is_finite() {
                segments.last_mut().expect("never empty").push((x, y));
            } else if !segments.last().expect("never empty").is_empty() {
                segments.push(vec![]);
            }
        }
        for (i, seg) in segments.into_iter().enumerate() {
            let drawn = chart.draw_series(LineSeries::new(seg, c.stroke_width(2)))?;
            if i == 0 {
                drawn.label(line.name.clone()).legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(3))
                });
            }
        }
    }
    if !lines.is_empty() {
        legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
    }
    Ok(())
}

/// The frame every chart of the page has: its title, margin and the
/// room for its axes' labels.
fn frame<'a, 'b, DB: DrawingBackend>(
    root: &'a DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
) -> ChartBuilder<'a, 'b, DB> {
    let mut builder = ChartBuilder::on(root);
    builder
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(64);
    builder
}

/// The legend every chart of the page draws, in the corner `at`.
fn legend<'a, DB, CT>(
    chart: &mut ChartContext<'a, DB, CT>,
    at: SeriesLabelPosition,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>>
where
    DB: DrawingBackend + 'a,
    CT: CoordTranslate,
{
    chart
        .configure_series_labels()
        .position(at)
        .margin(8)
        .label_font(("sans-serif", 13))
        .background_style(WHITE.mix(0.85))
        .border_style(RGBColor(200, 200, 200))
        .draw()
}

/// Grouped bars: for each group (a service, a policy) one bar per series,
/// in the series' colours, with a legend; a NaN value draws no bar.
pub fn bars(title: &str, y_desc: &str, groups: &[String], series: &[(String, Vec<f64>)]) -> String {
    let mut svg = String::new();
    let n = groups.len().max(1) as f64;
    let (y0, y1) = range(series.iter().flat_map(|s| s.1.iter().copied()), 0.0);
    // Room above the tallest bar for the legend.
    let y1 = y1 + (y1 - y0) * 0.3;
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        let _ = draw_bars(
            &root,
            title,
            y_desc,
            (-0.5..n - 0.5, y0..y1),
            groups,
            series,
        );
        let _ = root.present();
    }
    svg
}

fn draw_bars(
    root: &Area<'_>,
    title: &str,
    y_desc: &str,
    (x, y): (std::ops::Range<f64>, std::ops::Range<f64>),
    groups: &[String],
    series: &[(String, Vec<f64>)],
) -> Drawn {
    root.fill(&WHITE)?;
    let mut chart = frame(root, title).build_cartesian_2d(x, y)?;
    let name = |v: &f64| {
        let i = v.round();
        if (v - i).abs() < 1e-6 && i >= 0.0 {
            groups.get(i as usize).cloned().unwrap_or_default()
        } else {
            String::new()
        }
    };
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(groups.len().max(1))
        .x_label_formatter(&name)
        .y_desc(y_desc)
        .light_line_style(RGBColor(238, 238, 238))
        .label_style(("sans-serif", 13))
        .draw()?;
    let k = series.len().max(1) as f64;
    let width = 0.8 / k;
    for (s, (label, values)) in series.iter().enumerate() {
        let c = colour(s);
        let left = |g: usize| g as f64 - 0.4 + s as f64 * width;
        chart
            .draw_series(
                values
                    .iter()
                    .enumerate()
                    .filter(|(_, v)| v.is_finite())
                    .map(move |(g, &v)| {
                        Rectangle::new([(left(g), 0.0), (left(g) + width * 0.92, v)], c.filled())
                    }),
            )?
            .label(label.clone())
            .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 12, y + 6)], c.filled()));
    }
    legend(&mut chart, SeriesLabelPosition::UpperRight)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::has_text as has;
    use super::*;

    #[test]
    fn a_line_chart_has_its_axes_labels_legend_and_marks_as_text() {
        let svg = lines(
            "amplification <over> time",
            "seconds",
            "×",
            &[1.0, 2.0, 3.0, 4.0],
            &[Line {
                name: "D".into(),
                ys: vec![1.0, 8.0, f64::NAN, 1.1],
            }],
            &[Mark {
                x: 2.5,
                label: "policy → ownership".into(),
            }],
        );
        assert!(svg.starts_with("<svg"), "{}", &svg[..80]);
        assert_eq!(svg.matches("<svg").count(), 1);
        assert!(svg.contains("amplification &lt;over&gt; time"));
        assert!(has(&svg, "seconds") && has(&svg, "D"));
        assert!(svg.contains("policy → ownership"));
        // Axis labels: the numbers along each axis are there as text.
        assert!(svg.matches("<text").count() > 8, "{svg}");
        // The NaN breaks the line into two.
        assert!(svg.matches("<polyline").count() >= 2);
    }

    #[test]
    fn bars_are_grouped_and_named() {
        let svg = bars(
            "amplification per policy",
            "×",
            &["B".into(), "C".into(), "D".into()],
            &[
                ("retry".into(), vec![2.0, 4.0, 8.0]),
                ("ownership".into(), vec![1.0, 1.0, f64::NAN]),
            ],
        );
        for t in ["B", "C", "D", "retry", "ownership"] {
            assert!(has(&svg, t), "{t} missing");
        }
        // Five bars and two legend swatches, over the white background.
        assert!(svg.matches("<rect").count() >= 8);
    }
}
