//! A heatmap as SVG: a grid of cells coloured by value, for a front end
//! that runs a grid of values (a sweep) and wants one picture of it.

use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::chart::SIZE;

/// The colour of a cell with no value: the run never recovered (it
/// "stayed down"). A red-brown no step of the scale comes near.
pub const NO_VALUE: RGBColor = RGBColor(120, 28, 28);

/// The colour of a cell whose value is NaN: not run, or nothing measured
/// in it (a light grey, drawn with `–`).
pub const NOT_MEASURED: RGBColor = RGBColor(225, 225, 225);

/// What is drawn over a heatmap's cells: the cells outlined, and a
/// verdict per cell whose changes draw a boundary (`[]` for none).
#[derive(Debug, Clone, Copy, Default)]
pub struct Marks<'a> {
    /// `(i, j)` of each cell to outline.
    pub outlined: &'a [(usize, usize)],
    /// `boundary[j][i]`: the cell's verdict, `None` without one.
    pub boundary: &'a [Vec<Option<bool>>],
}

/// Where a grid's verdicts change, for drawing a boundary between its
/// cells: `edges[j][i]` says whether the cell `(i, j)` has another verdict
/// than its neighbour to the right, and than its neighbour in the next
/// row. A cell or neighbour without a verdict (`None`) draws no edge. The
/// terminal's heatmap and the SVG one both draw from it.
pub fn boundary_edges(
    verdict: impl Fn(usize, usize) -> Option<bool>,
    nx: usize,
    ny: usize,
) -> Vec<Vec<(bool, bool)>> {
    let differs = |a: Option<bool>, b: Option<bool>| matches!((a, b), (Some(a), Some(b)) if a != b);
    (0..ny)
        .map(|j| {
            (0..nx)
                .map(|i| {
                    let here = verdict(i, j);
                    let right = i + 1 < nx && differs(here, verdict(i + 1, j));
                    let next = j + 1 < ny && differs(here, verdict(i, j + 1));
                    (right, next)
                })
                .collect()
        })
        .collect()
}

/// Draws a heatmap: `cells[j][i]` is the value at `x.1[i]` (columns,
/// left to right) and `y.1[j]` (rows, bottom to top); `x.0` and `y.0`
/// name the axes. Values run from pale yellow (the lowest) to dark blue
/// (the highest) on a scale shown at the right with `legend` as its title;
/// `None` is [`NO_VALUE`] ("stayed down"), `Some(NaN)` [`NOT_MEASURED`]
/// (a cell not run, or with nothing measured; a NaN axis value has no
/// label). Each `(i, j)` in `marks.outlined`
/// is outlined in black (a cell the model gets wrong). `marks.boundary`,
/// when given, is a verdict per cell (the model's: the fleet recovers or
/// not; `None` where there is none): a thick line is drawn between every
/// two neighbouring cells whose verdicts differ. Every label is escaped.
/// Returns one `<svg>` element for a [`Section`](super::Section).
pub fn heatmap_svg(
    title: &str,
    x: (&str, &[f64]),
    y: (&str, &[f64]),
    cells: &[Vec<Option<f64>>],
    legend: &str,
    marks: Marks<'_>,
) -> String {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        let _ = draw(&root, title, x, y, cells, legend, marks);
        let _ = root.present();
    }
    svg
}

/// A value's colour on the scale, `f` in 0..=1.
pub fn scale(f: f64) -> RGBColor {
    const STOPS: [(f64, f64, f64); 5] = [
        (255.0, 255.0, 204.0),
        (161.0, 218.0, 180.0),
        (65.0, 182.0, 196.0),
        (44.0, 127.0, 184.0),
        (37.0, 52.0, 148.0),
    ];
    let f = if f.is_finite() {
        f.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let p = f * (STOPS.len() - 1) as f64;
    let i = (p.floor() as usize).min(STOPS.len() - 2);
    let t = p - i as f64;
    let (a, b) = (STOPS[i], STOPS[i + 1]);
    let mix = |u: f64, v: f64| (u + (v - u) * t).round() as u8;
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

/// A value for a label: short, without trailing zeros.
fn short(v: f64) -> String {
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".into()
    } else {
        s.to_string()
    }
}

/// The chart's plotting area: a unit square per cell, centred on `(i, j)`.
type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// What drawing returns: plotters' errors, boxed.
type Drawn = Result<(), Box<dyn std::error::Error>>;

/// Draws [`heatmap_svg`]'s picture on `root`: the cells on a chart, what
/// is marked over them, and the scale beside it.
fn draw(
    root: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    title: &str,
    (x_desc, xs): (&str, &[f64]),
    (y_desc, ys): (&str, &[f64]),
    cells: &[Vec<Option<f64>>],
    legend: &str,
    Marks {
        outlined: marked,
        boundary,
    }: Marks<'_>,
) -> Drawn {
    root.fill(&WHITE)?;
    let (nx, ny) = (xs.len().max(1), ys.len().max(1));
    let extent = Extent::of(cells);
    let (main, side) = root.split_horizontally(SIZE.0 - 150);
    let mut chart = ChartBuilder::on(&main)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(64)
        .build_cartesian_2d(-0.5..nx as f64 - 0.5, -0.5..ny as f64 - 0.5)?;
    draw_axes(&mut chart, (x_desc, xs), (y_desc, ys), (nx, ny))?;
    draw_cells(&mut chart, cells, (nx, ny), extent)?;
    draw_outlines(&mut chart, marked, (nx, ny))?;
    draw_boundary(&mut chart, boundary, (nx, ny))?;
    draw_scale(&side, legend, extent)
}

/// The lowest and highest finite value of the cells (0 and 1 without
/// one), which the scale runs between.
#[derive(Debug, Clone, Copy)]
struct Extent {
    lo: f64,
    hi: f64,
}

impl Extent {
    fn of(cells: &[Vec<Option<f64>>]) -> Extent {
        let values = cells
            .iter()
            .flatten()
            .filter_map(|v| *v)
            .filter(|v| v.is_finite());
        let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
            (a.min(v), b.max(v))
        });
        let (lo, hi) = if lo.is_finite() { (lo, hi) } else { (0.0, 1.0) };
        Extent { lo, hi }
    }

    /// Where `v` is on the scale, 0..=1 (the middle when every value is
    /// one).
    fn at(self, v: f64) -> f64 {
        if self.hi > self.lo {
            (v - self.lo) / (self.hi - self.lo)
        } else {
            0.5
        }
    }
}

/// The label of the axis position `v`: the value of the cell there, none
/// between cells or for a NaN value.
fn tick_label(values: &[f64], v: &f64) -> String {
    let i = v.round();
    if (v - i).abs() < 1e-6 && i >= 0.0 {
        values
            .get(i as usize)
            .filter(|x| x.is_finite())
            .map(|&x| short(x))
            .unwrap_or_default()
    } else {
        String::new()
    }
}

/// The axes, labelled with the cells' values and named.
fn draw_axes(
    chart: &mut Chart<'_, '_>,
    (x_desc, xs): (&str, &[f64]),
    (y_desc, ys): (&str, &[f64]),
    (nx, ny): (usize, usize),
) -> Drawn {
    let (fx, fy) = (|v: &f64| tick_label(xs, v), |v: &f64| tick_label(ys, v));
    chart
        .configure_mesh()
        .disable_mesh()
        .x_labels(nx.min(12))
        .y_labels(ny.min(12))
        .x_label_formatter(&fx)
        .y_label_formatter(&fy)
        .x_desc(x_desc)
        .y_desc(y_desc)
        .label_style(("sans-serif", 13))
        .draw()?;
    Ok(())
}

/// Each cell filled with its value's colour, and its value written in it
/// when the cells are few enough to read.
fn draw_cells(
    chart: &mut Chart<'_, '_>,
    cells: &[Vec<Option<f64>>],
    (nx, ny): (usize, usize),
    extent: Extent,
) -> Drawn {
    let few = nx * ny <= 200;
    for (j, row) in cells.iter().enumerate().take(ny) {
        for (i, v) in row.iter().enumerate().take(nx) {
            let (i, j) = (i as f64, j as f64);
            let c = match v {
                None => NO_VALUE,
                Some(v) if !v.is_finite() => NOT_MEASURED,
                Some(v) => scale(extent.at(*v)),
            };
            chart.draw_series(std::iter::once(Rectangle::new(
                [(i - 0.5, j - 0.5), (i + 0.5, j + 0.5)],
                c.filled(),
            )))?;
            if few {
                let text = match v {
                    None => "down".to_string(),
                    Some(v) if !v.is_finite() => "–".to_string(),
                    Some(v) => short(*v),
                };
                let ink = match v {
                    Some(v) if !v.is_finite() || extent.at(*v) < 0.55 => BLACK,
                    _ => WHITE,
                };
                let style = TextStyle::from(("sans-serif", 12).into_font())
                    .color(&ink)
                    .pos(Pos::new(HPos::Center, VPos::Center));
                chart.draw_series(std::iter::once(Text::new(text, (i, j), style)))?;
            }
        }
    }
    Ok(())
}

/// The marked cells outlined in black.
fn draw_outlines(
    chart: &mut Chart<'_, '_>,
    marked: &[(usize, usize)],
    (nx, ny): (usize, usize),
) -> Drawn {
    // An outline as a closed path: the SVG backend gives a rectangle's
    // border no width.
    chart.draw_series(
        marked
            .iter()
            .filter(|(i, j)| *i < nx && *j < ny)
            .map(|&(i, j)| {
                let (i, j, h) = (i as f64, j as f64, 0.46);
                PathElement::new(
                    vec![
                        (i - h, j - h),
                        (i + h, j - h),
                        (i + h, j + h),
                        (i - h, j + h),
                        (i - h, j - h),
                    ],
                    BLACK.stroke_width(3),
                )
            }),
    )?;
    Ok(())
}

/// The boundary: a segment between two neighbours of other verdicts.
fn draw_boundary(
    chart: &mut Chart<'_, '_>,
    boundary: &[Vec<Option<bool>>],
    (nx, ny): (usize, usize),
) -> Drawn {
    let verdict = |i: usize, j: usize| boundary.get(j).and_then(|r| r.get(i)).copied().flatten();
    let mut segments = vec![];
    for (j, row) in boundary_edges(verdict, nx, ny).into_iter().enumerate() {
        for (i, (right, next)) in row.into_iter().enumerate() {
            let (x, y) = (i as f64, j as f64);
            if right {
                segments.push(vec![(x + 0.5, y - 0.5), (x + 0.5, y + 0.5)]);
            }
            if next {
                segments.push(vec![(x - 0.5, y + 0.5), (x + 0.5, y + 0.5)]);
            }
        }
    }
    chart.draw_series(
        segments
            .into_iter()
            .map(|s| PathElement::new(s, RGBColor(230, 85, 13).stroke_width(5))),
    )?;
    Ok(())
}

/// The scale: a column of steps from the highest (top) to the lowest,
/// under `legend`, then the colours of "stayed down" and "not measured".
fn draw_scale(
    side: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    legend: &str,
    Extent { lo, hi }: Extent,
) -> Drawn {
    let font = ("sans-serif", 13).into_font();
    side.draw(&Text::new(legend.to_string(), (10, 40), font.clone()))?;
    let steps = 20;
    for k in 0..steps {
        let f = 1.0 - k as f64 / (steps - 1) as f64;
        let top = 64 + k * 12;
        side.draw(&Rectangle::new(
            [(14, top), (40, top + 12)],
            scale(f).filled(),
        ))?;
    }
    side.draw(&Text::new(short(hi), (46, 62), font.clone()))?;
    side.draw(&Text::new(
        short(lo),
        (46, 64 + steps * 12 - 14),
        font.clone(),
    ))?;
    let down = 64 + steps * 12 + 20;
    side.draw(&Rectangle::new(
        [(14, down), (40, down + 14)],
        NO_VALUE.filled(),
    ))?;
    side.draw(&Text::new(
        "stayed down".to_string(),
        (46, down),
        font.clone(),
    ))?;
    let not = down + 22;
    side.draw(&Rectangle::new(
        [(14, not), (40, not + 14)],
        NOT_MEASURED.filled(),
    ))?;
    side.draw(&Text::new("not measured".to_string(), (46, not), font))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::has_text as has;
    use super::*;

    #[test]
    fn a_heatmap_colours_cells_outlines_the_marked_and_names_the_down() {
        let svg = heatmap_svg(
            "recovery <s>",
            ("spike rps", &[400.0, 600.0, 800.0]),
            ("seconds", &[2.0, 4.0]),
            &[
                vec![Some(1.0), Some(3.5), None],
                vec![Some(2.0), None, None],
            ],
            "time to recover, s",
            Marks {
                outlined: &[(1, 0)],
                boundary: &[
                    vec![Some(true), Some(true), Some(false)],
                    vec![Some(true), Some(false), Some(false)],
                ],
            },
        );
        assert_eq!(svg.matches("<svg").count(), 1);
        assert!(svg.contains("recovery &lt;s&gt;"));
        for t in ["400", "800", "spike rps", "stayed down", "down", "3.5"] {
            assert!(has(&svg, t), "{t} missing");
        }
        let down = format!(
            "fill=\"#{:02X}{:02X}{:02X}\"",
            NO_VALUE.0, NO_VALUE.1, NO_VALUE.2
        );
        assert!(
            svg.to_ascii_uppercase()
                .matches(&down.to_ascii_uppercase())
                .count()
                >= 3,
            "three cells stayed down"
        );
        // The marked cell's outline: a rectangle with no fill.
        assert!(svg.contains("stroke-width=\"3\""));
        // The boundary: three segments between cells of other verdicts.
        assert_eq!(svg.matches("stroke-width=\"5\"").count(), 3, "{svg}");
    }

    #[test]
    fn the_scale_runs_from_pale_to_dark() {
        let (a, b) = (scale(0.0), scale(1.0));
        assert!(
            u32::from(a.0) + u32::from(a.1) + u32::from(a.2)
                > u32::from(b.0) + u32::from(b.1) + u32::from(b.2)
        );
        assert_eq!(scale(f64::NAN), scale(0.0));
    }
}
