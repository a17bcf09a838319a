//! A sweep drawn: per policy, a heatmap in the terminal of the time to
//! recover, of the availability after the trigger, and of the model's
//! drain time, with the model's boundary drawn between the cells where
//! its verdict changes (`┃` across, `━` down) and `!` on each cell whose
//! measurement disagrees with it; and the same cells as CSV.

use std::fmt::Write as _;

use super::grid::show;
use super::{Cell, Sweep};
use crate::report::html::heatmap::boundary_edges;
use crate::report::html::{heatmap_svg, page, table, Marks, Section};

/// A cell's width in the terminal.
const W: usize = 7;

/// The terminal's heatmaps, policy by policy.
pub fn text(s: &Sweep) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} · {} · {} of {} cells{} · recovered = goodput back to 95% of the offered rate by the run's end ({}s a cell)",
        s.topology,
        s.scenario,
        s.cells.len(),
        s.planned,
        if s.interrupted { " (interrupted)" } else { "" },
        show(s.duration_s),
    );
    for p in &s.policies {
        let mine: Vec<&Cell> = s.cells.iter().filter(|c| &c.policy == p).collect();
        if mine.is_empty() {
            let _ = writeln!(out, "\n{p}: not run");
            continue;
        }
        let modelled = mine.iter().any(|c| c.model_recovers.is_some());
        let _ = writeln!(
            out,
            "\n{p}{}",
            if modelled {
                " · ┃ ━ the model's boundary · ! the measurement disagrees with the model"
            } else {
                " · the model does not cover this policy or trigger: no boundary"
            }
        );
        let thresholds = thresholds(&mine);
        if !thresholds.is_empty() {
            let _ = writeln!(
                out,
                "  the model's recovery threshold: {} rps (a storm drains only below it)",
                thresholds.join(", ")
            );
        }
        grid(
            &mut out,
            s,
            p,
            "seconds to recover after the trigger (down: not by the run's end)",
            |c| {
                let v = c
                    .recovered_after_s
                    .map_or_else(|| "down".to_string(), |t| format!("{t:.0}s"));
                let bang = if c.agrees == Some(false) { "!" } else { "" };
                format!("{v}{bang}")
            },
        );
        grid(&mut out, s, p, "availability after the trigger", |c| {
            if c.availability_after.is_nan() {
                "–".into()
            } else {
                format!("{:.1}%", c.availability_after * 100.0)
            }
        });
        if modelled {
            grid(
                &mut out,
                s,
                p,
                "the model's fluid queue: seconds to drain",
                |c| match (c.model_recovers, c.model_after_s) {
                    (None, _) => "-".into(),
                    (Some(_), Some(t)) => format!("{t:.0}s"),
                    (Some(_), None) => "never".into(),
                },
            );
            let judged: Vec<&&Cell> = mine.iter().filter(|c| c.agrees.is_some()).collect();
            let off: Vec<&&&Cell> = judged.iter().filter(|c| c.agrees == Some(false)).collect();
            let far = off.iter().filter(|c| !c.near_boundary).count();
            let _ = writeln!(
                out,
                "  {} of {} cells agree with the model; {} disagree{}",
                judged.len() - off.len(),
                judged.len(),
                off.len(),
                match (off.len(), far) {
                    (0, _) => String::new(),
                    (_, 0) => ", all next to its boundary".into(),
                    _ => format!(", {far} of them away from its boundary"),
                }
            );
        }
        let saturated = mine.iter().filter(|c| c.saturated).count();
        if saturated > 0 {
            let _ = writeln!(
                out,
                "  SATURATED in {saturated} cells: the machine could not carry their load, their figures are lower bounds"
            );
        }
    }
    out
}

/// The model's recovery thresholds of `cells`, each once, lowest first.
fn thresholds(cells: &[&Cell]) -> Vec<String> {
    let mut t: Vec<f64> = cells.iter().filter_map(|c| c.threshold_rps).collect();
    t.sort_by(f64::total_cmp);
    t.dedup();
    t.into_iter().map(show).collect()
}

/// One heatmap: the first name across, the second (if any) down.
fn grid(out: &mut String, s: &Sweep, p: &str, title: &str, show_cell: impl Fn(&Cell) -> String) {
    let xs = &s.vary[0];
    let ys: Vec<Option<f64>> = match s.vary.get(1) {
        Some(a) => a.values.iter().map(|v| Some(*v)).collect(),
        None => vec![None],
    };
    let label = match s.vary.get(1) {
        Some(y) => format!("{}╲{}", y.name, xs.name),
        None => xs.name.clone(),
    };
    let lw = label.chars().count().max(6);
    let _ = writeln!(out, "  {title}");
    let _ = write!(out, "  {label:>lw$} ");
    for v in &xs.values {
        let _ = write!(out, " {:>W$}", show(*v));
    }
    out.push('\n');
    let verdict = |x: usize, y: usize| s.cell(p, x, y).and_then(|c| c.model_recovers);
    let edges = boundary_edges(verdict, xs.values.len(), ys.len());
    for (yi, y) in ys.iter().enumerate() {
        let _ = write!(out, "  {:>lw$} ", y.map(show).unwrap_or_default());
        for xi in 0..xs.values.len() {
            // The boundary between this cell and the one before it.
            let sep = match xi.checked_sub(1).map(|b| edges[yi][b].0) {
                Some(true) => '┃',
                _ => ' ',
            };
            let text = s
                .cell(p, xi, yi)
                .map_or_else(|| "·".to_string(), &show_cell);
            let _ = write!(out, "{sep}{text:>W$}");
        }
        out.push('\n');
        // The boundary between this row and the next.
        if yi + 1 < ys.len() {
            let line: String = edges[yi]
                .iter()
                .map(|&(_, next)| match next {
                    true => format!(" {}", "━".repeat(W)),
                    false => " ".repeat(W + 1),
                })
                .collect();
            if line.trim().is_empty() {
                continue;
            }
            let _ = writeln!(out, "  {:>lw$} {}", "", line.trim_end());
        }
    }
}

/// Every cell as a CSV row.
pub fn csv(s: &Sweep) -> String {
    let mut out = String::from("policy");
    for a in &s.vary {
        let _ = write!(out, ",{}", a.name);
    }
    out.push_str(",trigger_end_s,recovered,recovered_after_s,model_after_s,model_recovers,threshold_rps,agrees,near_boundary,availability_after,saturated\n");
    let num = |v: Option<f64>| v.filter(|x| x.is_finite()).map_or(String::new(), show);
    let flag = |v: Option<bool>| v.map_or(String::new(), |b| b.to_string());
    for c in &s.cells {
        out.push_str(&c.policy);
        for v in &c.at {
            let _ = write!(out, ",{}", show(*v));
        }
        let _ = writeln!(
            out,
            ",{},{},{},{},{},{},{},{},{},{}",
            show(c.trigger_end_s),
            c.recovered,
            num(c.recovered_after_s),
            num(c.model_after_s.map(|t| (t * 100.0).round() / 100.0)),
            flag(c.model_recovers),
            num(c.threshold_rps),
            flag(c.agrees),
            c.near_boundary,
            num(Some((c.availability_after * 1e4).round() / 1e4)),
            c.saturated,
        );
    }
    out
}

/// The heatmaps as one self-contained HTML page: per policy, the time to
/// recover, the availability after the trigger and the model's drain
/// time, each with the model's boundary drawn between the cells and the
/// cells it gets wrong outlined; then every cell as a table.
pub fn html(s: &Sweep) -> String {
    let mut sections = vec![intro(s)];
    // Every policy's time to recover first, then the availabilities,
    // then the model's drain times: the heatmaps to compare side by side.
    let (mut times, mut avail, mut model) = (vec![], vec![], vec![]);
    let axes = Axes::of(s);
    for p in &s.policies {
        let Some(charts) = policy_charts(s, p, &axes) else {
            times.push(Section {
                title: format!("{p}: not run"),
                text: "The sweep was stopped before its first cell.".into(),
                ..Section::default()
            });
            continue;
        };
        times.push(charts.time);
        avail.push(charts.availability);
        model.extend(charts.model);
    }
    sections.extend(times.into_iter().chain(avail).chain(model));
    sections.push(every_cell(s));
    page(&format!("chaoslab sweep · {}", s.topology), &sections)
}

/// The page's first section: what was swept, and how to read the
/// heatmaps.
fn intro(s: &Sweep) -> Section {
    Section {
        title: "The sweep".into(),
        text: format!(
            "{} on {}: {} of {} cells, each a fresh fleet for {}s after its warm-up{}. A cell recovered when goodput came back to 95% of the offered rate and stayed there to the run's end. The orange line is the model's boundary: the fluid queue of the bottleneck drains in time on one side and not on the other; an outlined cell is one where the measurement disagrees with the model.",
            s.scenario,
            s.topology,
            s.cells.len(),
            s.planned,
            show(s.duration_s),
            if s.interrupted { " (interrupted: the cells done)" } else { "" },
        ),
        ..Section::default()
    }
}

/// The heatmaps' axes: the first name across, the second (if any) down;
/// without a second, one row at NaN (no label).
struct Axes<'a> {
    x: (&'a str, &'a [f64]),
    y_name: &'a str,
    ys: Vec<f64>,
}

impl<'a> Axes<'a> {
    fn of(s: &'a Sweep) -> Axes<'a> {
        let xs = &s.vary[0];
        let (y_name, ys): (&str, Vec<f64>) = match s.vary.get(1) {
            Some(a) => (a.name.as_str(), a.values.clone()),
            None => ("", vec![f64::NAN]),
        };
        Axes {
            x: (xs.name.as_str(), xs.values.as_slice()),
            y_name,
            ys,
        }
    }

    fn y(&self) -> (&str, &[f64]) {
        (self.y_name, self.ys.as_slice())
    }

    /// `f` of each cell, `[j][i]`.
    fn grid<T>(&self, f: impl Fn(usize, usize) -> T) -> Vec<Vec<T>> {
        (0..self.ys.len())
            .map(|j| (0..self.x.1.len()).map(|i| f(i, j)).collect())
            .collect()
    }
}

/// One policy's heatmaps.
struct PolicyCharts {
    time: Section,
    availability: Section,
    /// The model's drain times, where the model judged any cell.
    model: Option<Section>,
}

/// A policy's heatmaps, none if it did not run.
fn policy_charts(s: &Sweep, p: &str, axes: &Axes<'_>) -> Option<PolicyCharts> {
    if !s.cells.iter().any(|c| c.policy == p) {
        return None;
    }
    let at = |i: usize, j: usize| s.cell(p, i, j);
    // A cell not run is NaN (not measured), not None (stayed down).
    let grid = |f: &dyn Fn(&Cell) -> Option<f64>| -> Vec<Vec<Option<f64>>> {
        axes.grid(|i, j| at(i, j).map_or(Some(f64::NAN), f))
    };
    let verdicts: Vec<Vec<Option<bool>>> =
        axes.grid(|i, j| at(i, j).and_then(|c| c.model_recovers));
    let wrong = wrong_cells(s, p, axes);
    let (x, y) = (axes.x, axes.y());
    let threshold = threshold_note(s, p);
    let time = Section::chart(
        format!("{p}: time to recover"),
        format!("Seconds from the trigger's end until goodput stayed at 95% of the offered rate; a cell that stayed down to the run's end is drawn as down.{threshold}"),
        heatmap_svg(
            &format!("{p}: seconds to recover"),
            x,
            y,
            &grid(&|c| c.recovered_after_s),
            "seconds",
            Marks {
                outlined: &wrong,
                boundary: &verdicts,
            },
        ),
    );
    let availability = Section::chart(
        format!("{p}: availability after the trigger"),
        "The share of root requests answered with success from the trigger's end to the run's end.",
        heatmap_svg(
            &format!("{p}: availability after the trigger, %"),
            x,
            y,
            &grid(&|c| Some(c.availability_after * 100.0)),
            "%",
            Marks {
                outlined: &wrong,
                boundary: &verdicts,
            },
        ),
    );
    let model = verdicts.iter().flatten().any(Option::is_some).then(|| {
        Section::chart(
            format!("{p}: the model's drain time"),
            "The model's fluid queue: seconds for the bottleneck's queue to drain below the level at which its callers' attempts time out (down: it never does).",
            heatmap_svg(
                &format!("{p}: the model's seconds to drain"),
                x,
                y,
                &grid(&|c| c.model_after_s),
                "seconds",
                Marks {
                    outlined: &[],
                    boundary: &verdicts,
                },
            ),
        )
    });
    Some(PolicyCharts {
        time,
        availability,
        model,
    })
}

/// `(i, j)` of each of the policy's cells the model gets wrong.
fn wrong_cells(s: &Sweep, p: &str, axes: &Axes<'_>) -> Vec<(usize, usize)> {
    (0..axes.ys.len())
        .flat_map(|j| (0..axes.x.1.len()).map(move |i| (i, j)))
        .filter(|&(i, j)| s.cell(p, i, j).is_some_and(|c| c.agrees == Some(false)))
        .collect()
}

/// The policy's recovery thresholds as a sentence (empty without one).
fn threshold_note(s: &Sweep, p: &str) -> String {
    let mine: Vec<&Cell> = s.cells.iter().filter(|c| c.policy == p).collect();
    match thresholds(&mine)[..] {
        [] => String::new(),
        ref t => format!(
            " The model's recovery threshold under {p}: {} rps.",
            t.join(", ")
        ),
    }
}

/// The page's last section: every cell as a table, as the CSV has them.
fn every_cell(s: &Sweep) -> Section {
    let mut head: Vec<&str> = vec!["policy"];
    head.extend(s.vary.iter().map(|a| a.name.as_str()));
    head.extend([
        "recovered after",
        "model",
        "agrees",
        "availability after",
        "saturated",
    ]);
    let rows: Vec<Vec<String>> = s.cells.iter().map(cell_row).collect();
    Section {
        title: "Every cell".into(),
        text: "As the CSV has them.".into(),
        html: table(&head, &rows),
        ..Section::default()
    }
}

/// A cell as a row of the table.
fn cell_row(c: &Cell) -> Vec<String> {
    let secs = |v: Option<f64>| v.map_or_else(|| "down".into(), |t| format!("{t:.1} s"));
    let mut r = vec![c.policy.clone()];
    r.extend(c.at.iter().map(|v| show(*v)));
    r.extend([
        secs(c.recovered_after_s),
        match c.model_recovers {
            None => "-".into(),
            Some(_) => secs(c.model_after_s),
        },
        c.agrees
            .map_or("-".into(), |a| if a { "yes" } else { "no" }.into()),
        if c.availability_after.is_nan() {
            "–".into()
        } else {
            format!("{:.1}%", c.availability_after * 100.0)
        },
        if c.saturated { "SATURATED" } else { "" }.into(),
    ]);
    r
}

#[cfg(test)]
mod tests {
    use super::super::Axis;
    use super::*;

    fn cell(x: f64, y: f64, recovered: Option<f64>, model: Option<bool>) -> Cell {
        Cell {
            policy: "retry".into(),
            at: vec![x, y],
            trigger_end_s: 6.0,
            recovered: recovered.is_some(),
            recovered_after_s: recovered,
            model_after_s: model.and_then(|m| m.then_some(2.5)),
            model_recovers: model,
            threshold_rps: Some(53.3),
            agrees: model.map(|m| m == recovered.is_some()),
            near_boundary: false,
            availability_after: if recovered.is_some() { 0.98 } else { 0.02 },
            saturated: false,
        }
    }

    fn sweep() -> Sweep {
        let mut s = Sweep {
            topology: "metastable".into(),
            scenario: "s.yaml".into(),
            duration_s: 20.0,
            vary: vec![
                Axis {
                    name: "LOAD".into(),
                    values: vec![40.0, 80.0, 120.0],
                },
                Axis {
                    name: "T".into(),
                    values: vec![1.0, 3.0],
                },
            ],
            policies: vec!["retry".into(), "budget".into()],
            cells: vec![
                cell(40.0, 1.0, Some(0.0), Some(true)),
                cell(80.0, 1.0, Some(2.0), Some(true)),
                cell(120.0, 1.0, None, Some(false)),
                cell(40.0, 3.0, Some(1.0), Some(true)),
                // Measured down where the model says it drains: next to
                // the boundary.
                cell(80.0, 3.0, None, Some(true)),
                cell(120.0, 3.0, None, Some(false)),
            ],
            planned: 12,
            interrupted: true,
        };
        s.mark_boundary();
        s
    }

    #[test]
    fn the_heatmap_draws_the_models_boundary_and_marks_disagreement() {
        let t = text(&sweep());
        insta::assert_snapshot!(t);
        assert!(t.contains("6 of 12 cells (interrupted)"), "{t}");
        assert!(t.contains("down!"), "{t}");
        assert!(
            t.contains("5 of 6 cells agree with the model; 1 disagree, all next to its boundary")
        );
        assert!(t.contains("budget: not run"), "{t}");
    }

    #[test]
    fn the_page_has_a_heatmap_per_figure_and_policy_that_ran_and_fetches_nothing() {
        let page = html(&sweep());
        // retry: time, availability, the model; budget did not run.
        assert_eq!(page.matches("<svg").count(), 3, "{page}");
        assert!(page.contains("retry: time to recover"));
        assert!(!page.contains("<script") && !page.contains("https://"));
        // The boundary (orange) and the one cell the model gets wrong.
        assert!(page.contains("stroke-width=\"5\""));
        assert!(page.contains("stroke-width=\"3\""));
    }

    #[test]
    fn a_cell_next_to_the_boundary_is_marked() {
        let s = sweep();
        let near: Vec<(f64, f64)> = s
            .cells
            .iter()
            .filter(|c| c.near_boundary)
            .map(|c| (c.at[0], c.at[1]))
            .collect();
        assert_eq!(near, [(80.0, 1.0), (120.0, 1.0), (80.0, 3.0), (120.0, 3.0)]);
    }

    #[test]
    fn csv_has_a_row_per_cell_and_blank_where_nothing_was_measured() {
        let c = csv(&sweep());
        let lines: Vec<&str> = c.lines().collect();
        assert_eq!(
            lines[0],
            "policy,LOAD,T,trigger_end_s,recovered,recovered_after_s,model_after_s,model_recovers,threshold_rps,agrees,near_boundary,availability_after,saturated"
        );
        assert_eq!(lines.len(), 7);
        assert_eq!(
            lines[1],
            "retry,40,1,6,true,0,2.5,true,53.3,true,false,0.98,false"
        );
        assert_eq!(
            lines[3],
            "retry,120,1,6,false,,,false,53.3,true,true,0.02,false"
        );
    }
}
