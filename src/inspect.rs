//! The commands that start nothing: `chaoslab check` (validate a
//! topology and print its graph) and `chaoslab model` (the analytical
//! table for the faults and policy asked for).

use std::fmt::Write as _;
use std::path::PathBuf;

use crate::error::RunError;
use crate::lab::{fold, LabState};
use crate::topology::{model, Topology};
use error_ownership::edge_budget::BudgetModel;

/// What `chaoslab check` is asked to check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckOptions {
    /// The topology file.
    pub topology: PathBuf,
    /// With many roots, also find each root's static radius by a
    /// simulation of the rules on the subgraph it reaches.
    pub simulate: bool,
    /// Print where each service would run over this many shards.
    pub shards: Option<usize>,
}

/// What `chaoslab model` is asked to model.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelOptions {
    /// The topology file.
    pub topology: PathBuf,
    /// The policy and faults to model.
    pub start: crate::options::Start,
}

/// `chaoslab check`.
pub fn check(args: CheckOptions) -> Result<(), RunError> {
    let t = Topology::load(&args.topology)?;
    let mut text = crate::topology::check::render_check_simulated(&t, args.simulate);
    text.push_str(&needs(&t));
    text.push_str(&crate::topology::model::window::describe(&t));
    if let Some(n) = args.shards {
        let p = crate::topology::shards::place(&t, n).map_err(|e| RunError::Usage(e.0))?;
        text.push_str(&crate::topology::shards::describe(&t, &p));
    }
    crate::error::write_or_print(None, &text, "check")
}

/// What a run of `t` in one process needs of the machine, and what this
/// one allows: open files and memory, as the fleet's start weighs them.
fn needs(t: &Topology) -> String {
    let (fd, mem) = crate::session::needs(t);
    let files = rlimit::Resource::NOFILE.get().map_or_else(
        |_| String::new(),
        |(_, hard)| format!(", this process may open {hard}"),
    );
    let room = crate::fleet::memory_room().map_or_else(String::new, |(b, what)| {
        format!(", {what} leaves {} MiB", b >> 20)
    });
    format!(
        "needs      {} open files ({} listeners, {} connections){files}; {}{room}\n",
        fd.total(),
        fd.listeners,
        fd.connections,
        mem.describe()
    )
}

/// `chaoslab model`: the analytical table, nothing started.
pub fn model(args: ModelOptions) -> Result<(), RunError> {
    let mut t = Topology::load(&args.topology)?;
    let actions = args.start.actions(&t).map_err(RunError::usage)?;
    fold(LabState::of(&t), &actions)
        .map_err(|e| RunError::Usage(e.to_string()))?
        .write_to(&mut t);
    crate::error::write_or_print(None, &model_table(&t), "model")
}

/// The model's table for a topology as it stands (faults and policy).
pub fn model_table(t: &Topology) -> String {
    let p = model::predict(t, &t.policy);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} · model · policy {} (R={}, B={}) · attribution {}",
        t.name,
        t.policy.name(),
        t.policy.effective_attempts(),
        t.policy
            .budget
            .map_or_else(|| "off".into(), |b| format!("{b}")),
        t.ownership.attribution.name()
    );
    let _ = writeln!(
        out,
        "{:<12} {:>5} {:>9} {:>10} {:>8} {:>8} {:>9} {:>9}",
        "service", "depth", "baseline", "load/root", "amp", "err%", "claimed%", "unclaim%"
    );
    for (s, sp) in t.services.iter().zip(&p.services) {
        let _ = writeln!(
            out,
            "{:<12} {:>5} {:>9.3} {:>10.3} {:>7.3}x {:>7.2}% {:>8.2}% {:>8.2}%",
            s.name,
            s.depth,
            s.multiplicity,
            sp.load,
            sp.amplification,
            sp.p_error * 100.0,
            sp.p_claimed * 100.0,
            sp.p_unclaimed * 100.0
        );
    }
    let _ = writeln!(
        out,
        "entry availability {:.4}% · storm radius {} · static radius {}",
        p.root_availability * 100.0,
        p.storm_radius,
        model::static_radius(t, &t.policy)
    );
    if let Some(b) = t.policy.budget_model().filter(|_| t.policy.mode.retries) {
        let _ = writeln!(out, "budget model: {}", b.describe());
        if matches!(b, BudgetModel::Concurrency { .. }) {
            let _ = writeln!(
                out,
                "  a concurrency cap depends on how long attempts take: without a measured latency the model assumes it does not bind (fast failures); a run's report models it from the latency it measured"
            );
        }
    }
    if let Some(b) = &t.policy.breaker {
        let _ = writeln!(
            out,
            "circuit breakers: {} in a row or {:.0}% of the last {} attempts open one for {:?}, {} probes; open all the time at or above that failure rate",
            b.consecutive,
            b.failure_ratio * 100.0,
            b.window,
            b.open_for,
            b.probes
        );
    }
    let capacity = crate::topology::check::render_capacity(t);
    if !capacity.is_empty() {
        out.push('\n');
        out.push_str(&capacity);
    }
    out
}
