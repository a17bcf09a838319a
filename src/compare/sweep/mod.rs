//! `chaoslab sweep` (SPEC section 16): the same scenario over a grid of
//! values (the load, a trigger's size or length, a budget ratio, attempts,
//! a timeout) under each policy, each cell on a fresh fleet, and where the
//! fleet came back: a heatmap per policy with the model's boundary drawn
//! over the measured cells, as the OSDI '22 metastability paper draws
//! trigger size against load.
//!
//! A cell is one run of [`super::Contest`]; its outcome is the
//! comparison's [`Recovery`](super::Recovery): recovered or not
//! by the run's end, how long after the trigger, and the availability
//! after it. The model's verdict for a cell is the fluid queue's
//! ([`crate::topology::model::capacity::recovery_after`]): it recovers
//! when its queue drains within the time the run leaves after the
//! trigger. Every cell is parsed and checked before the first fleet
//! starts, so bad input costs nothing (exit 2).

pub mod grid;
pub mod heatmap;

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::time::Instant;

use serde::Serialize;

use super::{clock, kept_steps, spike, Choice, Contest};
use crate::error::{write_output, RunError};
use crate::lab::{Action, RunRecord};
use crate::options::Contenders;
use crate::scenario::Scenario;
use crate::signals::Interrupts;
use crate::topology::Topology;
use grid::{Grid, Point};

/// The most cells a sweep runs without `--yes`.
pub const MAX_CELLS: usize = 400;

/// The most cells a sweep runs at all: its cells, tables and heatmaps
/// stay a few megabytes.
pub const MAX_CELLS_EVER: usize = 10_000;

/// Default measured time of a cell: long enough after a few seconds'
/// trigger to see a drained queue.
pub const SWEEP_DURATION: Duration = Duration::from_secs(20);

/// One cell: a point of the grid under one policy, as it ran.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
pub struct Cell {
    /// The policy.
    pub policy: String,
    /// The point's value of each swept name, in the grid's order.
    pub at: Vec<f64>,
    /// When the trigger ended (the last step), seconds after the warm-up.
    pub trigger_end_s: f64,
    /// Goodput came back to 95% of the offered rate and stayed there to
    /// the run's end.
    pub recovered: bool,
    /// How long after the trigger it came back; `null`: it did not.
    pub recovered_after_s: Option<f64>,
    /// The model's fluid-queue drain time; `null`: it never drains, or the
    /// model does not cover the cell (see `model_recovers`).
    pub model_after_s: Option<f64>,
    /// Whether the model says the fleet is back by the run's end; `null`
    /// when it does not model the policy (deadlines, breakers, throttles,
    /// concurrency limits, closed loops) or the steps are not a load spike.
    pub model_recovers: Option<bool>,
    /// The model's recovery threshold: the offered rate below which a
    /// queue in the storm drains (`null`: no service has finite workers).
    pub threshold_rps: Option<f64>,
    /// Whether measurement and model agree (`null` without a model).
    pub agrees: Option<bool>,
    /// Whether a neighbouring cell of the same policy (one step along a
    /// name) has the other model verdict: the cell is on the boundary.
    pub near_boundary: bool,
    /// Root availability from the trigger's end to the run's end.
    pub availability_after: f64,
    /// The lab could not carry the cell's load (its figures are lower
    /// bounds).
    pub saturated: bool,
}

/// A swept name and its values.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
pub struct Axis {
    /// The name.
    pub name: String,
    /// Its values.
    pub values: Vec<f64>,
}

/// A whole sweep, or the part of it that ran.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
pub struct Sweep {
    /// The topology's name.
    pub topology: String,
    /// The scenario file.
    pub scenario: String,
    /// Each cell's measured time, seconds.
    pub duration_s: f64,
    /// The swept names: the first across, the second down.
    pub vary: Vec<Axis>,
    /// The policies, a heatmap each.
    pub policies: Vec<String>,
    /// The cells that ran to their end, policy by policy, the first name
    /// varying fastest.
    pub cells: Vec<Cell>,
    /// How many cells the grid has.
    pub planned: usize,
    /// A signal stopped the sweep: `cells` holds those done.
    pub interrupted: bool,
}

impl Sweep {
    /// The cell of `policy` at the grid's `x`-th value of the first name
    /// and `y`-th of the second, if it ran.
    pub fn cell(&self, policy: &str, x: usize, y: usize) -> Option<&Cell> {
        self.position(policy, x, y).map(|i| &self.cells[i])
    }

    /// Where in `cells` that cell is.
    fn position(&self, policy: &str, x: usize, y: usize) -> Option<usize> {
        let at = |i: usize, k: usize| self.vary.get(i).and_then(|a| a.values.get(k)).copied();
        let (vx, vy) = (at(0, x)?, at(1, y));
        self.cells.iter().position(|c| {
            c.policy == policy && c.at.first() == Some(&vx) && c.at.get(1).copied() == vy
        })
    }

    /// Sets each cell's `near_boundary`: a neighbour one step along a
    /// name has the other model verdict.
    fn mark_boundary(&mut self) {
        let nx = self.vary.first().map_or(1, |a| a.values.len());
        let ny = self.vary.get(1).map_or(1, |a| a.values.len());
        let mut marks = vec![];
        for p in &self.policies {
            for y in 0..ny {
                for x in 0..nx {
                    let Some(here) = self.cell(p, x, y).and_then(|c| c.model_recovers) else {
                        continue;
                    };
                    let near = [(-1i64, 0i64), (1, 0), (0, -1), (0, 1)]
                        .iter()
                        .any(|(dx, dy)| {
                            let (x2, y2) = (x as i64 + dx, y as i64 + dy);
                            x2 >= 0
                                && y2 >= 0
                                && self
                                    .cell(p, x2 as usize, y2 as usize)
                                    .and_then(|c| c.model_recovers)
                                    .is_some_and(|m| m != here)
                        });
                    marks.extend(self.position(p, x, y).map(|i| (i, near)));
                }
            }
        }
        for (i, near) in marks {
            self.cells[i].near_boundary = near;
        }
    }
}

/// One point, its files checked with its values put in. Its topology is
/// parsed again when its cells run, so that a grid of a large mesh never
/// holds more than one topology at a time.
struct Prepared {
    point: Point,
    steps: Vec<(Duration, Action)>,
    warmup: Duration,
    duration: Duration,
}

/// The topology's text, and where it comes from.
struct Texts {
    topology: (String, String),
}

impl Texts {
    /// The topology with `point`'s values put in, parsed and validated;
    /// errors say at which point.
    fn topology(&self, point: &Point) -> Result<Topology, RunError> {
        let (_, origin) = &self.topology;
        let cell = |e: String| RunError::Usage(format!("at {point}: {e}"));
        let t = self.text(point)?;
        Topology::from_yaml(&t, origin).map_err(|e| cell(e.to_string()))
    }

    /// The topology's text with `point`'s values put in.
    fn text(&self, point: &Point) -> Result<String, RunError> {
        let (text, origin) = &self.topology;
        grid::substitute(text, origin, point)
            .map_err(|e| RunError::Usage(format!("at {point}: {e}")))
    }
}

fn read(p: &Path, what: &str) -> Result<String, RunError> {
    std::fs::read_to_string(p)
        .map_err(|e| RunError::Usage(format!("{what} {}: cannot read it: {e}", p.display())))
}

/// Puts every point of `grid` into the topology's and the scenario's
/// text and checks what comes out, before any fleet starts.
fn prepare(args: &Options, grid: &Grid) -> Result<(Texts, Vec<Prepared>), RunError> {
    let scenario_path = args.scenario.as_deref().ok_or_else(|| {
        RunError::Usage(
            "no --scenario: a sweep plays a scenario in every cell, with the swept values written `${NAME}` in it".into(),
        )
    })?;
    let (t_origin, s_origin): (String, String) = (
        args.topology.display().to_string(),
        scenario_path.display().to_string(),
    );
    let t_text = read(&args.topology, "topology")?;
    let s_text = read(scenario_path, "--scenario")?;
    let used = |text: &str, origin: &str| grid::names_used(text, origin).map_err(RunError::Usage);
    let (in_t, in_s) = (used(&t_text, &t_origin)?, used(&s_text, &s_origin)?);
    for v in &grid.vary {
        if !in_s.contains(&v.name) && !in_t.contains(&v.name) {
            return Err(RunError::Usage(format!(
                "--vary {}: neither {s_origin} nor {t_origin} uses `${{{}}}`, so every cell would be the same",
                v.name, v.name
            )));
        }
    }
    let texts = Texts {
        topology: (t_text, t_origin),
    };
    let prepared = grid
        .points()
        .into_iter()
        .map(|point| {
            let cell = |e: String| RunError::Usage(format!("at {point}: {e}"));
            let topology = texts.topology(&point)?;
            let s = grid::substitute(&s_text, &s_origin, &point).map_err(cell)?;
            let scenario =
                Scenario::from_yaml(&s, &s_origin, &topology).map_err(|e| cell(e.to_string()))?;
            let (warmup, duration) = clock(&args.runs.clock, &scenario, SWEEP_DURATION)
                .map_err(|e| cell(e.to_string()))?;
            crate::cli::fail_actions(&topology, &args.runs.fail)
                .map_err(|e| cell(e.to_string()))?;
            let steps = kept_steps(&scenario, warmup);
            Ok(Prepared {
                point,
                steps,
                warmup,
                duration,
            })
        })
        .collect::<Result<Vec<_>, RunError>>()?;
    Ok((texts, prepared))
}

/// Seconds to a tenth: a sample's time is a tick's, not a millisecond's.
fn tenths(s: f64) -> f64 {
    (s * 10.0).round() / 10.0
}

/// Refuses a swept name whose values change nothing a cell runs: its
/// `${NAME}` is only in a policy step, which every cell leaves out (each
/// runs a policy of `--policies`), in a comment, or in the load's rate
/// when `--rps` (`rps`) sets it for every cell.
fn same_cells(
    grid: &Grid,
    texts: &Texts,
    cells: &[Prepared],
    rps: Option<f64>,
) -> Result<(), RunError> {
    // What a run does not read: its words, and a rate `--rps` replaces.
    let runs = |p: &Prepared| -> Result<Topology, RunError> {
        let mut t = texts.topology(&p.point)?;
        t.description = None;
        t.scenario = None;
        if let Some(r) = rps {
            t.load.set_rps(r);
        }
        Ok(t)
    };
    let mut stride = 1;
    for v in &grid.vary {
        let (a, b) = (&cells[0], cells.get(stride));
        stride *= v.values.len();
        let Some(b) = b.filter(|_| v.values.len() > 1) else {
            continue;
        };
        if runs(a)? == runs(b)?
            && a.steps == b.steps
            && (a.warmup, a.duration) == (b.warmup, b.duration)
        {
            return Err(RunError::Usage(format!(
                "--vary {}: its values change nothing a cell runs: `${{{}}}` is only where a sweep does not look (a comment, a description, or a policy step, which every cell leaves out to run the policies of --policies; write the policy's numbers in the topology instead; in a comment, `$${{` is a `${{` a sweep leaves alone)",
                v.name, v.name
            )));
        }
    }
    Ok(())
}

/// A cell's outcome from its run.
fn cell(choice: Choice, p: &Prepared, run: &super::CompareRun, record: &RunRecord) -> Cell {
    let r = run.recovery.unwrap_or_else(|| super::recovery(record));
    let horizon = p.duration.as_secs_f64() - r.trigger_end_s;
    // The fluid queue models a load spike into a bottleneck: only the rate
    // may change in the steps, and a service must have finite workers.
    // Measured, a second counts once it has ended: the model's drain time
    // must leave one whole second before the run's end to be seen.
    let t = record.start.applied_to(&record.topology);
    let threshold = crate::topology::model::capacity::capacity(&t, &t.policy).recovery_threshold;
    let only_rates = p.steps.iter().all(|(_, a)| matches!(a, Action::SetRps(_)));
    let model_recovers =
        (r.modelled && only_rates && threshold.is_some() && spike(&p.steps).is_some())
            .then(|| r.model_after_s.is_some_and(|m| m + 1.0 <= horizon));
    let recovered = r.recovered_after_s.is_some();
    Cell {
        threshold_rps: threshold.map(tenths),
        policy: choice.name(),
        at: p.point.0.iter().map(|(_, v)| *v).collect(),
        trigger_end_s: r.trigger_end_s,
        recovered,
        recovered_after_s: r.recovered_after_s.map(tenths),
        model_after_s: r.model_after_s.map(tenths),
        model_recovers,
        agrees: model_recovers.map(|m| m == recovered),
        near_boundary: false,
        availability_after: r.availability_after,
        saturated: run.report.saturated,
    }
}

/// `754` seconds as `12m34s`.
fn minutes(secs: f64) -> String {
    let s = secs.max(0.0).round() as u64;
    match s / 60 {
        0 => format!("{s}s"),
        m => format!("{m}m{:02}s", s % 60),
    }
}

/// What `chaoslab sweep` is asked to sweep, and what to write.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// The topology file (it may use the swept names as `${NAME}` too).
    pub topology: PathBuf,
    /// The scenario every cell plays; a sweep refuses to run without one.
    pub scenario: Option<PathBuf>,
    /// A name and its values each, `LOAD=60..140:20`: one for a line of
    /// cells, two for a grid.
    pub vary: Vec<String>,
    /// The policies (a heatmap each), and what every cell's runs share.
    pub runs: Contenders,
    /// Where to write every cell as CSV.
    pub csv: Option<PathBuf>,
    /// Where to write the sweep as JSON.
    pub report: Option<PathBuf>,
    /// Where to write the heatmaps as one HTML file.
    pub html: Option<PathBuf>,
    /// Run more than [`MAX_CELLS`] cells.
    pub yes: bool,
    /// Each cell over this many shard processes.
    pub shards: Option<usize>,
}

impl Options {
    /// The files the sweep writes, with their flags.
    pub fn outputs(&self) -> Vec<(&'static str, &Path)> {
        [
            ("--csv", &self.csv),
            ("--report", &self.report),
            ("--html", &self.html),
        ]
        .into_iter()
        .filter_map(|(f, p)| p.as_deref().map(|p| (f, p)))
        .collect()
    }
}

/// `chaoslab sweep`.
pub fn run(args: Options) -> Result<(), RunError> {
    let mut inputs = vec![args.topology.as_path()];
    inputs.extend(args.scenario.as_deref());
    crate::error::check_outputs(&args.outputs(), &inputs)?;
    let grid = Grid::parse(&args.vary).map_err(RunError::Usage)?;
    let choices = Choice::parse_list(&args.runs.policies)?;
    let names: Vec<String> = choices.iter().map(|c| c.name()).collect();
    if let Some(twice) = names
        .iter()
        .find(|n| names.iter().filter(|m| m == n).count() > 1)
    {
        return Err(RunError::Usage(format!(
            "--policies {}: `{twice}` is named twice: a heatmap each",
            args.runs.policies
        )));
    }
    let planned = grid.len() * choices.len();
    if planned > MAX_CELLS_EVER {
        return Err(RunError::Usage(format!(
            "{} points × {} policies = {planned} cells: a sweep runs at most {MAX_CELLS_EVER}, --yes or not (larger steps)",
            grid.len(),
            choices.len()
        )));
    }
    if planned > MAX_CELLS && !args.yes {
        return Err(RunError::Usage(format!(
            "{} points × {} policies = {planned} cells, each a fleet of its own: more than {MAX_CELLS} asks for --yes (or larger steps)",
            grid.len(),
            choices.len()
        )));
    }
    let (texts, cells) = prepare(&args, &grid)?;
    same_cells(&grid, &texts, &cells, args.runs.load.rps)?;
    if cells.iter().any(|p| p.steps.is_empty()) {
        return Err(RunError::Usage(format!(
            "--scenario {}: it has no steps once its policy steps are left out: a sweep measures how each cell comes through a trigger",
            args.scenario.as_deref().unwrap_or(Path::new("")).display()
        )));
    }
    let mut sweep = Sweep {
        topology: texts.topology(&cells[0].point)?.name,
        scenario: args
            .scenario
            .as_deref()
            .unwrap_or(Path::new(""))
            .display()
            .to_string(),
        duration_s: cells[0].duration.as_secs_f64(),
        vary: grid
            .vary
            .iter()
            .map(|v| Axis {
                name: v.name.clone(),
                values: v.values.clone(),
            })
            .collect(),
        policies: choices.iter().map(|c| c.name()).collect(),
        cells: vec![],
        planned,
        interrupted: false,
    };
    let interrupts = Interrupts::watch();
    let started = Instant::now();
    // A cell that cannot run ends the sweep, after the cells done are
    // printed and written.
    let mut failed = None;
    'all: for choice in &choices {
        for p in &cells {
            if interrupts.interrupted() {
                break 'all;
            }
            let done = sweep.cells.len();
            let left = match done {
                0 => (p.warmup + p.duration).as_secs_f64() * planned as f64,
                _ => started.elapsed().as_secs_f64() / done as f64 * (planned - done) as f64,
            };
            eprintln!(
                "sweep: cell {} of {planned} · {} · {} · about {} left",
                done + 1,
                choice.name(),
                p.point,
                minutes(left),
            );
            let topology = texts.topology(&p.point)?;
            // Over shards, the cell's topology in a file they read.
            let file = match args.shards {
                Some(n) => {
                    crate::topology::shards::place(&topology, n)
                        .map_err(|e| RunError::Usage(format!("at {}: {}", p.point, e.0)))?;
                    let text = texts.text(&p.point)?;
                    Some(
                        crate::session::shards::TopologyFile::write(&text, "sweep-cell").map_err(
                            |e| RunError::Usage(format!("writing the cell's topology: {e}")),
                        )?,
                    )
                }
                None => None,
            };
            let plan = Contest {
                base: &topology,
                population: &args.runs.population,
                fail: &args.runs.fail,
                load: &args.runs.load,
                warmup: p.warmup,
                duration: p.duration,
                steps: p.steps.clone(),
                processes: file.as_ref().map(|f| f.path().to_path_buf()),
                shards: args.shards,
            };
            let (run, record) = match plan.run(*choice, &interrupts, None) {
                Ok(done) => done,
                Err(e) => {
                    failed = Some(e);
                    break 'all;
                }
            };
            if run.report.interrupted {
                // Cut short: its figures would not be the cell's.
                break 'all;
            }
            sweep.cells.push(cell(*choice, p, &run, &record));
        }
    }
    // Read once: a signal after this is not in the files, nor in the exit.
    let outcome = interrupts.outcome();
    sweep.interrupted = outcome.is_err();
    sweep.mark_boundary();
    print!("{}", heatmap::text(&sweep));
    if let Some(p) = &args.csv {
        write_output(p, &heatmap::csv(&sweep), "CSV")?;
    }
    if let Some(p) = &args.report {
        let json = serde_json::to_string_pretty(&sweep).expect("a sweep serialises");
        write_output(p, &json, "report")?;
    }
    if let Some(p) = &args.html {
        write_output(p, &heatmap::html(&sweep), "HTML report")?;
    }
    if let Some(e) = failed {
        return Err(e);
    }
    outcome.map_err(RunError::from)
}
