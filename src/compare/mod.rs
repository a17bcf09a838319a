//! The comparison front end: `chaoslab compare TOPOLOGY` runs the same
//! fault under each policy on a fresh session and prints the seed-style
//! table, one row per policy (and the model's row under each).
//!
//! With `--scenario FILE` each run also plays the scenario's steps (its
//! policy steps left out: each run keeps its policy), and the comparison
//! says how each policy came through the trigger: the time to recover
//! (from the last step, the first second from which goodput stays at 95%
//! of the offered rate or more), what the model's fluid queue predicts,
//! and the availability after the trigger.
//!
//! [`sweep`] is the same comparison over a grid of values: every cell a
//! [`Contest`] run of one policy, drawn as heatmaps (`chaoslab sweep`).

pub mod sweep;
mod table;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use crate::cli::{fail_actions, parse_policy};
use crate::endpoints::metrics;
use crate::error::{write_output, RunError};
use crate::lab::figures::Figure;
use crate::lab::{Action, RunRecord};
use crate::options::{self, Contenders, Population};
use crate::report::{Report, TimeSeries};
use crate::scenario::Scenario;
use crate::session::{Session, Setup};
use crate::signals::Interrupts;
use crate::topology::model::{self, capacity::Trigger};
use crate::topology::{
    BreakerSetting, Closed, Concurrency, HedgeSetting, PolicyFields, Preset, Topology, MIN_THINK,
};
use error_ownership::breaker::BreakerConfig;
use error_ownership::hedge::HedgeConfig;
pub use table::{compare_table, recovery_table};

/// Default measured time of each run.
pub const COMPARE_DURATION: Duration = Duration::from_secs(8);
/// Default warm-up of each run.
pub const COMPARE_WARMUP: Duration = Duration::from_secs(2);

/// One policy's run in a comparison.
#[derive(Debug, Clone, Serialize)]
pub struct CompareRun {
    /// The policy: a preset, `+deadline` when deadlines propagate.
    pub policy: String,
    /// The run's report.
    pub report: Report,
    /// How it came through the scenario's trigger, with `--scenario`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recovery: Option<Recovery>,
}

pub use crate::report::Recovery;

/// A policy to compare: a preset, whether deadlines propagate, whether
/// every edge runs a circuit breaker, and whether every service runs an
/// adaptive concurrency limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Choice {
    /// The preset.
    pub preset: Preset,
    /// `+deadline`: calls carry the time left.
    pub deadline: bool,
    /// `+breaker`: a circuit breaker (the defaults of `breaker: on`) on
    /// every edge.
    pub breaker: bool,
    /// `+gradient`, `+vegas`, `+aimd`: that controller, with its source's
    /// defaults, on every service the lab runs (SPEC section 15).
    pub limit: Option<&'static str>,
    /// `+backoff`: every retry waits [`Population::backoff`] (the base of
    /// an exponential backoff with full jitter).
    pub backoff: bool,
    /// `+closed`: every root a closed loop of [`Population::clients`]
    /// clients offering the root's rate while answers are instant.
    pub closed: bool,
    /// `+hedge`: every edge hedges with gRPC A6's numbers of `hedge: on`
    /// (three attempts, 100 ms apart, failures non-fatal).
    pub hedge: bool,
}

impl Choice {
    /// Parses `budget`, `budget+deadline`, `retry+breaker`.
    pub fn parse(s: &str) -> Result<Choice, RunError> {
        let mut parts = s.trim().split('+');
        let name = parts.next().unwrap_or_default();
        let mut choice = Choice::plain(parse_policy(name).map_err(RunError::usage)?);
        for other in parts {
            match other {
                "deadline" => choice.deadline = true,
                "breaker" => choice.breaker = true,
                "backoff" => choice.backoff = true,
                "closed" => choice.closed = true,
                "hedge" => choice.hedge = true,
                _ if Concurrency::WORDS.contains(&other) => {
                    choice.limit = Concurrency::WORDS.into_iter().find(|w| *w == other);
                }
                _ => {
                    return Err(RunError::Usage(format!(
                        "--policies {s}: `+{other}` is not known (`+deadline`, `+breaker`, `+gradient`, `+vegas`, `+aimd`, `+backoff`, `+closed` or `+hedge`, e.g. retry+breaker)"
                    )))
                }
            }
        }
        Ok(choice)
    }

    /// `preset` alone.
    pub fn plain(preset: Preset) -> Choice {
        Choice {
            preset,
            deadline: false,
            breaker: false,
            limit: None,
            backoff: false,
            closed: false,
            hedge: false,
        }
    }

    /// Parses `--policies`: names separated by commas; `all` stands for
    /// every preset, in [`Preset::ALL`]'s order, then `retry+breaker` and
    /// `ownership+breaker`.
    pub fn parse_list(list: &str) -> Result<Vec<Choice>, RunError> {
        let mut choices = vec![];
        for s in list.split(',').filter(|s| !s.trim().is_empty()) {
            if s.trim() == "all" {
                let plain = Choice::plain;
                choices.extend(Preset::ALL.into_iter().map(plain));
                for preset in [Preset::Retry, Preset::Ownership] {
                    choices.push(Choice {
                        breaker: true,
                        ..plain(preset)
                    });
                }
                choices.push(Choice {
                    hedge: true,
                    ..plain(Preset::Retry)
                });
                for limit in Concurrency::WORDS {
                    for preset in [Preset::Retry, Preset::Ownership] {
                        choices.push(Choice {
                            limit: Some(limit),
                            ..plain(preset)
                        });
                    }
                }
                // Open against closed load, with and without backoff.
                for (backoff, closed) in [(true, false), (false, true), (true, true)] {
                    choices.push(Choice {
                        backoff,
                        closed,
                        ..plain(Preset::Retry)
                    });
                }
            } else {
                choices.push(Choice::parse(s)?);
            }
        }
        if choices.is_empty() {
            return Err(RunError::Usage(
                "--policies is empty: name at least one preset (or `all`)".into(),
            ));
        }
        Ok(choices)
    }

    /// Its name in the table.
    pub fn name(self) -> String {
        format!(
            "{}{}{}{}{}{}{}{}",
            self.preset.name(),
            if self.deadline { "+deadline" } else { "" },
            if self.breaker { "+breaker" } else { "" },
            if self.limit.is_some() { "+" } else { "" },
            self.limit.unwrap_or_default(),
            if self.backoff { "+backoff" } else { "" },
            if self.closed { "+closed" } else { "" },
            if self.hedge { "+hedge" } else { "" },
        )
    }

    /// `base` with this choice's concurrency limit on every service the
    /// lab runs, and with `+closed` every open-loop root a closed loop of
    /// its share of `population`'s clients, thinking so that they offer
    /// the root's rate at the run's total `rps` while answers are instant.
    pub fn topology(self, base: &Topology, population: &Population, rps: f64) -> Topology {
        let mut t = base.clone();
        if let Some(word) = self.limit {
            for s in t.services.iter_mut().filter(|s| s.url.is_none()) {
                s.concurrency = Concurrency::parse(word);
            }
        }
        if self.closed {
            let shares: Vec<f64> = t.load.shares().map(|(_, s)| s).collect();
            for (root, share) in t.load.roots.iter_mut().zip(shares) {
                let rate = rps * share;
                if root.closed.is_some() || rate <= 0.0 {
                    continue;
                }
                let clients = ((f64::from(population.clients) * share).round() as u32).max(1);
                let think = Duration::from_secs_f64(f64::from(clients) / rate).max(MIN_THINK);
                let closed = Closed { clients, think };
                root.rps = closed.nominal_rps();
                root.closed = Some(closed);
            }
            t.load.rps = t.load.roots.iter().map(|r| r.rps).sum();
        }
        t
    }

    /// The policy this choice starts each run in.
    fn policy(self, population: &Population) -> PolicyFields {
        PolicyFields {
            preset: Some(self.preset),
            deadline: Some(self.deadline),
            breaker: Some(if self.breaker {
                BreakerSetting::On(BreakerConfig::DEFAULT)
            } else {
                BreakerSetting::Off
            }),
            backoff: self.backoff.then_some(population.backoff),
            hedge: self.hedge.then_some(HedgeSetting::On(HedgeConfig::DEFAULT)),
            ..Default::default()
        }
    }
}

/// A whole comparison.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// Topology name.
    pub topology: String,
    /// One run per policy, in the order asked.
    pub runs: Vec<CompareRun>,
    /// A signal ended the comparison early: the last run is cut short and
    /// the policies after it did not run.
    pub interrupted: bool,
}

/// What `chaoslab compare` is asked to compare, and what to write.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// The topology file.
    pub topology: PathBuf,
    /// The policies, and what each of their runs shares.
    pub runs: Contenders,
    /// Show the model's prediction under each measured figure.
    pub model: bool,
    /// A scenario whose steps play in every run.
    pub scenario: Option<PathBuf>,
    /// Where to write the comparison as JSON.
    pub report: Option<PathBuf>,
    /// Where to write the comparison as one HTML page.
    pub html: Option<PathBuf>,
    /// Where to serve Prometheus metrics of the policy running now.
    pub metrics: Option<String>,
    /// Each service an OS process of its own (fresh nodes for each
    /// policy).
    pub processes: bool,
    /// The mesh over this many shard processes (fresh for each policy).
    pub shards: Option<usize>,
}

/// `chaoslab compare`: the same fault under each policy, each on a fresh
/// session, one after another.
pub fn run(args: Options) -> Result<(), RunError> {
    let outputs: Vec<(&str, &std::path::Path)> = args
        .report
        .iter()
        .map(|p| ("--report", p.as_path()))
        .chain(args.html.iter().map(|p| ("--html", p.as_path())))
        .collect();
    let mut inputs = vec![args.topology.as_path()];
    inputs.extend(args.scenario.as_deref());
    crate::error::check_outputs(&outputs, &inputs)?;
    let base = Topology::load(&args.topology)?;
    let choices = Choice::parse_list(&args.runs.policies)?;
    let rps = args.runs.load.rps.unwrap_or(base.load.rps);
    if let Some(n) = args.shards {
        crate::topology::shards::place(&base, n).map_err(|e| RunError::Usage(e.0))?;
    }
    let flag = if args.processes {
        "--processes"
    } else {
        "--shards"
    };
    if args.processes || args.shards.is_some() {
        if let Some(c) = choices.iter().find(|c| c.closed) {
            crate::cli::closed_loop_in_one_process(&c.topology(&base, &args.runs.population, rps))
                .map_err(RunError::usage)?;
        }
        crate::cli::closed_loop_in_one_process(&base).map_err(RunError::usage)?;
        if let Some(c) = choices.iter().find(|c| c.limit.is_some()) {
            return Err(RunError::Usage(format!(
                "--policies {}: a concurrency limit is set on the lab's own topology, which {flag} does not carry to its nodes; write `concurrency:` in the topology file instead",
                c.name()
            )));
        }
    }
    let scenario = match &args.scenario {
        Some(p) => Scenario::load(p, &base).map_err(RunError::input)?,
        None => Scenario::default(),
    };
    let (warmup, duration) = clock(&args.runs.clock, &scenario, COMPARE_DURATION)?;
    let steps = kept_steps(&scenario, warmup);
    if steps.len() < scenario.steps.len() {
        eprintln!("compare: the scenario's policy steps are left out: each run keeps its policy");
    }
    // One endpoint for the whole comparison, reading the run of the moment.
    let metrics = match &args.metrics {
        Some(a) => {
            let addr = crate::endpoints::listen::parse_addr("--metrics", a)?;
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .map_err(|e| RunError::Usage(format!("--metrics {a}: {e}")))?;
            let current = metrics::Current::default();
            let bound = metrics::serve_current(rt.handle(), addr, current.clone())?;
            eprintln!("metrics: http://{bound}/metrics (label policy: the run of the moment)");
            Some((rt, current))
        }
        None => None,
    };
    let interrupts = Interrupts::watch();
    let plan = Contest {
        base: &base,
        population: &args.runs.population,
        fail: &args.runs.fail,
        load: &args.runs.load,
        warmup,
        duration,
        steps,
        processes: (args.processes || args.shards.is_some()).then(|| args.topology.clone()),
        shards: args.shards,
    };
    let mut runs = vec![];
    for choice in choices {
        if interrupts.interrupted() {
            break;
        }
        eprintln!(
            "compare: {} under {} for {:.0?} (+{:.0?} warm-up)…",
            base.name,
            choice.name(),
            duration,
            warmup
        );
        let current = metrics.as_ref().map(|(_, c)| c);
        runs.push(plan.run(choice, &interrupts, current)?.0);
    }
    let cmp = Comparison {
        topology: base.name.clone(),
        runs,
        interrupted: interrupts.interrupted(),
    };
    print!("{}", compare_table(&cmp, args.model));
    print!("{}", recovery_table(&cmp));
    if let Some(p) = &args.report {
        let json = serde_json::to_string_pretty(&cmp).expect("a comparison serialises");
        write_output(p, &json, "report")?;
    }
    if let Some(p) = &args.html {
        write_output(p, &html_page(&cmp), "HTML report")?;
    }
    interrupts.outcome().map_err(RunError::from)
}

/// The longest a run of a comparison or a sweep may last, its warm-up
/// included: a week.
pub const MAX_RUN: Duration = Duration::from_secs(7 * 24 * 3600);

/// Each run's warm-up and measured time: the flags', else the
/// scenario's, else the comparison's warm-up and `duration`; checked
/// against the scenario's steps and windows, and together at most
/// [`MAX_RUN`].
pub fn clock(
    flags: &options::Clock,
    scenario: &Scenario,
    duration: Duration,
) -> Result<(Duration, Duration), RunError> {
    let duration = flags.duration.or(scenario.duration).unwrap_or(duration);
    let warmup = flags.warmup.or(scenario.warmup).unwrap_or(COMPARE_WARMUP);
    if warmup.checked_add(duration).is_none_or(|t| t > MAX_RUN) {
        return Err(RunError::Usage(format!(
            "a warm-up of {} and a duration of {} make a run longer than a week: each run is a fleet on this machine",
            crate::format::fmt_duration(warmup),
            crate::format::fmt_duration(duration)
        )));
    }
    scenario
        .check_duration(duration, flags.duration.is_some())
        .map_err(RunError::input)?;
    Ok((warmup, duration))
}

/// The scenario's steps on the lab's clock, but its policy steps: each
/// run of a comparison (or cell of a sweep) keeps its policy.
pub fn kept_steps(scenario: &Scenario, warmup: Duration) -> Vec<(Duration, Action)> {
    let keep = |a: &Action| !matches!(a, Action::Policy(_) | Action::Mode { .. });
    scenario
        .plan_steps(warmup)
        .into_iter()
        .filter(|(_, a)| keep(a))
        .collect()
}

/// What every run of a comparison shares, and every cell of a sweep its
/// policies: the topology, the faults and load flags, the clock and the
/// scenario's steps.
#[derive(Debug, Clone)]
pub struct Contest<'a> {
    /// The topology as written.
    pub base: &'a Topology,
    /// What `+closed` and `+backoff` mean.
    pub population: &'a Population,
    /// `--fail`.
    pub fail: &'a [String],
    /// `--rps` and `--seed`.
    pub load: &'a options::Load,
    /// Each run's warm-up.
    pub warmup: Duration,
    /// Each run's measured time.
    pub duration: Duration,
    /// The scenario's steps, policy steps left out ([`kept_steps`]).
    pub steps: Vec<(Duration, Action)>,
    /// `--processes`: the topology file each node reads.
    pub processes: Option<std::path::PathBuf>,
    /// `--shards N`: with `processes`, that many shards instead.
    pub shards: Option<usize>,
}

impl Contest<'_> {
    /// Runs `choice` once on a fresh session, `interrupts` stopping it
    /// early, `metrics` serving it while it runs; its report (marked
    /// interrupted when a signal cut it short) and its record.
    pub fn run(
        &self,
        choice: Choice,
        interrupts: &Interrupts,
        metrics: Option<&metrics::Current>,
    ) -> Result<(CompareRun, RunRecord), RunError> {
        let base = self.base;
        let rps = self.load.rps.unwrap_or(base.load.rps);
        let mut initial = vec![Action::Policy(choice.policy(self.population))];
        initial.extend(fail_actions(base, self.fail).map_err(RunError::usage)?);
        initial.extend(self.load.actions().map_err(RunError::usage)?);
        let session = Session::start(Setup {
            initial,
            seed: self.load.seed.unwrap_or(1),
            warmup: self.warmup,
            until: Some(self.warmup + self.duration),
            steps: self.steps.clone(),
            processes: self.processes.clone(),
            shards: self.shards,
            ..Setup::new(choice.topology(base, self.population, rps))
        })?;
        interrupts.attach(session.stopper());
        if let Some(current) = metrics {
            current.store(Some(Arc::new(metrics::Source::of(
                &session,
                Some(choice.name()),
            ))));
        }
        let record = session.wait()?;
        if let Some(current) = metrics {
            current.store(None);
        }
        let mut report = Report::measure(&record, self.warmup, Duration::MAX);
        if interrupts.interrupted() {
            report.mark_interrupted();
        }
        let run = CompareRun {
            policy: choice.name(),
            report,
            recovery: (!self.steps.is_empty()).then(|| recovery(&record)),
        };
        Ok((run, record))
    }
}

/// The comparison's page for `--html`.
fn html_page(c: &Comparison) -> String {
    use crate::report::html::compare;
    let runs: Vec<compare::PolicyRun<'_>> = c
        .runs
        .iter()
        .map(|r| compare::PolicyRun {
            policy: &r.policy,
            report: &r.report,
            recovery: r.recovery,
        })
        .collect();
    compare::page(&c.topology, &runs, c.interrupted)
}

/// The share of the offered rate goodput must keep to count as recovered.
pub const RECOVERED: f64 = 0.95;

/// How a finished run came through its trigger: the last step ends it.
pub fn recovery(r: &RunRecord) -> Recovery {
    let end = r.steps.iter().map(|(t, _)| *t).max().unwrap_or(r.warmup);
    let series = TimeSeries::from_series(&r.series, &r.topology, r.warmup, Duration::MAX);
    let trigger_end_s = end.saturating_sub(r.warmup).as_secs_f64();
    // A second counts when goodput kept to the rate offered then; for a
    // closed loop, whose clients send less while answers are slow, when
    // it kept to what they sent.
    let closed = r
        .topology
        .load
        .roots
        .iter()
        .any(|root| root.closed.is_some());
    let ok: Vec<(f64, bool)> = series
        .t_s
        .iter()
        .zip(series.entry_rps.iter().zip(&series.availability))
        .map(|(&t, (&sent, &avail))| {
            let offered = r
                .planned_state_at(r.warmup + Duration::from_secs_f64(t))
                .rps;
            let wanted = if closed { sent } else { offered };
            (
                t,
                (!closed || sent > 0.0) && sent * avail >= RECOVERED * wanted,
            )
        })
        .collect();
    let after: Vec<&(f64, bool)> = ok.iter().filter(|(t, _)| *t > trigger_end_s).collect();
    let recovered_at = after
        .iter()
        .rposition(|(_, good)| !good)
        .map_or(after.first().map(|(t, _)| *t), |i| {
            after.get(i + 1).map(|(t, _)| *t)
        });
    let window = Report::measure(r, end, Duration::MAX);
    let policy = &r.start.applied_to(&r.topology).policy;
    // The fluid queue knows nothing of deadlines, breakers, throttles,
    // adaptive concurrency limits or clients that wait for their answers.
    let modelled = !(policy.deadline
        || policy.breaker.is_some()
        || policy.mode.throttle
        || closed
        || r.topology.services.iter().any(|s| s.concurrency.is_some()));
    Recovery {
        modelled,
        trigger_end_s,
        // The second ending at `t` is the first good one: recovery began
        // within it, at its start.
        recovered_after_s: recovered_at.map(|t| (t - 1.0 - trigger_end_s).max(0.0)),
        model_after_s: spike(&r.steps).filter(|_| modelled).and_then(|trigger| {
            model::capacity::recovery_after(&r.topology, policy, trigger).map(|d| d.as_secs_f64())
        }),
        availability_after: window.fleet[Figure::RootAvailability],
    }
}

/// The load spike the steps make, when their last two set the rate: the
/// rate of the one before last, for as long as it lasted, then the last.
pub fn spike(steps: &[(Duration, Action)]) -> Option<Trigger> {
    let rates: Vec<(Duration, f64)> = steps
        .iter()
        .filter_map(|(t, a)| match a {
            Action::SetRps(r) => Some((*t, *r)),
            _ => None,
        })
        .collect();
    let [.., (t1, r1), (t2, r2)] = rates[..] else {
        return None;
    };
    Some(Trigger {
        rps: r1,
        secs: t2.saturating_sub(t1).as_secs_f64(),
        after: r2,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_and_closed_load_are_choices_and_all_compares_them_against_retry() {
        let c = Choice::parse("retry+backoff+closed").unwrap();
        assert!(c.backoff && c.closed && c.preset == Preset::Retry);
        assert_eq!(c.name(), "retry+backoff+closed");
        let all: Vec<String> = Choice::parse_list("all")
            .unwrap()
            .into_iter()
            .map(Choice::name)
            .collect();
        assert_eq!(
            all[all.len() - 3..],
            ["retry+backoff", "retry+closed", "retry+backoff+closed"]
        );
        let e = Choice::parse("retry+open").unwrap_err().to_string();
        assert!(e.contains("`+backoff`, `+closed` or `+hedge`"), "{e}");
        assert!(all.contains(&"retry+hedge".to_string()));
        let hedged = Choice::parse("retry+hedge").unwrap();
        assert_eq!(
            hedged.policy(&Population::default()).hedge,
            Some(HedgeSetting::On(HedgeConfig::DEFAULT))
        );
    }

    #[test]
    fn closed_shares_the_clients_among_the_roots_at_the_runs_rate() {
        let t = Topology::from_yaml(
            "name: t\nload:\n  entries:\n    - { entry: A, rps: 30 }\n    - { entry: B, rps: 10 }\nservices:\n  A: { calls: [C] }\n  B: { calls: [C] }\n  C: {}\n",
            "t.yaml",
        )
        .unwrap();
        let population = Population::default();
        let closed = Choice {
            closed: true,
            ..Choice::plain(Preset::Retry)
        };
        // At --rps 80: A offers 60 a second, B 20.
        let c = closed.topology(&t, &population, 80.0);
        let got: Vec<(u32, f64)> = c
            .load
            .roots
            .iter()
            .map(|r| {
                let k = r.closed.unwrap();
                (k.clients, k.nominal_rps())
            })
            .collect();
        assert_eq!(got[0].0, 38);
        assert_eq!(got[1].0, 13);
        assert!(
            (got[0].1 - 60.0).abs() < 1e-6 && (got[1].1 - 20.0).abs() < 1e-6,
            "{got:?}"
        );
        assert!((c.load.rps - 80.0).abs() < 1e-6);
        // Not closed: the roots are left open.
        let open = Choice::plain(Preset::Retry).topology(&t, &population, 80.0);
        assert!(open.load.roots.iter().all(|r| r.closed.is_none()));
        // The policy `+backoff` starts in.
        let backoff = Choice {
            backoff: true,
            ..Choice::plain(Preset::Retry)
        };
        assert_eq!(
            backoff.policy(&population).backoff,
            Some(Duration::from_millis(100))
        );
        assert_eq!(
            Choice::plain(Preset::Retry).policy(&population).backoff,
            None
        );
    }
}
