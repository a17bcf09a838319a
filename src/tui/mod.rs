//! The live dashboard: `chaoslab topologies/uber-chain.yaml`.
//!
//! The dashboard is a front end over the same run loop as a headless run
//! ([`crate::scenario::drive`]). The fleet, its load and the run loop live
//! on the tokio runtime's worker threads; the dashboard lives on the main
//! thread and only ever (a) reads the newest [`Snapshot`] from the watch
//! channel the run loop publishes to, and (b) sends [`Action`]s, the same
//! absolute actions a scenario step uses. So a slow terminal can delay a
//! frame, never a request: drawing cannot change the measurements.
//!
//! The pieces follow the Elm architecture: [`keys`] maps a key to a
//! [`keys::Msg`], [`update::update`] changes the [`state::State`] and
//! yields the action to send, and [`view::draw`] is a pure function of the
//! state and the snapshot.
//!
//! The terminal is restored however the dashboard ends: on quit, on
//! Ctrl-C (a key in raw mode, or SIGINT/SIGTERM from outside), when the
//! run loop dies, and on a panic — a panic hook restores the terminal
//! first and then prints the message, so it is never lost in the
//! alternate screen.

pub mod keys;
pub mod state;
pub mod update;
pub mod view;

#[cfg(test)]
mod fixtures;

use std::io::{self, Stdout, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Once};
use std::time::Duration;

use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::cursor::{Hide, Show};
use ratatui::crossterm::event::{self, Event as TermEvent};
use ratatui::crossterm::execute;
use ratatui::crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen,
};
use ratatui::Terminal;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::error::RunError;
use crate::report::Report;
use crate::scenario::{drive, record, Action, Event, Lab, LabOptions, Plan, Snapshot};
use crate::topology::{BudgetSetting, PolicyFields, Topology};

/// How to run the dashboard.
#[derive(Debug, Clone)]
pub struct Options {
    /// Frames per second (clamped to 1..=60).
    pub fps: u32,
    /// `--no-color` (the `NO_COLOR` variable is honoured as well).
    pub no_color: bool,
    /// Write the JSON report here on quit.
    pub report: Option<PathBuf>,
    /// Seed for every random choice.
    pub seed: u64,
    /// Leading time the report on quit leaves out.
    pub warmup: Duration,
    /// Save the session's actions as a scenario file here on quit.
    pub record: Option<PathBuf>,
}

impl Options {
    /// Whether to draw in colour: not with `--no-color`, nor when
    /// `NO_COLOR` is set to anything non-empty (no-color.org).
    pub fn color(&self) -> bool {
        !self.no_color && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
    }
}

/// The actions that put a fleet of `t`'s shape into the state `t` holds
/// now (policy mode and numbers, faults, dropped contexts, attribution,
/// rate), as events at time zero.
fn starting_state(t: &Topology) -> Vec<Event> {
    let p = &t.policy;
    let mut actions = vec![
        Action::Policy(PolicyFields {
            attempts: Some(p.attempts),
            budget: Some(p.budget.map_or(BudgetSetting::Off, BudgetSetting::Ratio)),
            ..PolicyFields::default()
        }),
        Action::Mode {
            retries: Some(p.retries),
            budget: Some(p.budget_on),
            ownership: Some(p.ownership),
        },
        Action::SetAttribution(t.ownership.attribution),
        Action::SetAtLeastOnce(t.ownership.at_least_once),
        Action::SetRps(t.load.rps),
    ];
    for (i, s) in t.services.iter().enumerate() {
        if s.fault.is_active() {
            actions.push(Action::SetFault {
                service: i,
                fault: s.fault.clone(),
            });
        }
        if s.context_dropped {
            actions.push(Action::SetContextDropped {
                service: i,
                dropped: true,
            });
        }
    }
    actions
        .into_iter()
        .map(|action| Event {
            t: Duration::ZERO,
            text: action.describe(t),
            action,
        })
        .collect()
}

/// Runs the dashboard until the user quits, then prints a summary and
/// writes the report if asked. The caller has checked for a terminal.
pub fn run(topology: Topology, opts: Options) -> Result<(), RunError> {
    let color = opts.color();
    let fps = opts.fps.clamp(1, 60);
    // What the session starts from, so a recording replays from the same
    // state whatever flags the replay is given.
    let initial = starting_state(&topology);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| RunError::Other(anyhow::anyhow!("starting the async runtime: {e}")))?;
    let lab = rt
        .block_on(Lab::start(
            topology,
            LabOptions {
                seed: opts.seed,
                ..LabOptions::default()
            },
        ))
        .map_err(RunError::Fleet)?;
    let (actions_tx, actions_rx) = mpsc::channel::<Action>(256);
    let (snaps_tx, snaps_rx) = watch::channel(Arc::new(lab.snapshot()));
    let (stop_tx, stop_rx) = watch::channel(false);
    let plan = Plan {
        warmup: opts.warmup,
        until: None,
        steps: vec![],
    };
    let driver = rt.spawn(drive(lab, plan, actions_rx, snaps_tx, stop_rx, |_| {}));
    let interrupted = Arc::new(AtomicBool::new(false));
    let ui_done = Arc::new(AtomicBool::new(false));
    rt.spawn(watch_signals(interrupted.clone(), ui_done.clone()));

    let outcome = match Guard::enter() {
        Ok(mut guard) => ui_loop(
            &mut guard.terminal,
            snaps_rx,
            &actions_tx,
            &driver,
            &interrupted,
            fps,
            color,
        ),
        Err(e) => Err(RunError::Other(anyhow::anyhow!(
            "setting up the terminal: {e}"
        ))),
    };
    // The guard is gone: the terminal is restored from here on.
    ui_done.store(true, Ordering::SeqCst);
    let _ = stop_tx.send(true);
    drop(actions_tx);
    let lab = rt
        .block_on(driver)
        .map_err(|e| RunError::Other(anyhow::anyhow!("the lab's run loop failed: {e}")))?;
    let report = Report::measure(&lab, opts.warmup, Duration::MAX);
    let events: Vec<String> = lab.events().iter().map(|e| e.to_string()).collect();
    let uptime = lab.elapsed();
    let recording = opts.record.as_ref().map(|p| {
        let mut all = initial;
        all.extend(lab.events().iter().cloned());
        (p, record::to_scenario_yaml(lab.topology(), &all, uptime))
    });
    rt.block_on(lab.stop());
    outcome?;
    if let Some(p) = &opts.report {
        crate::error::write_output(p, &report.to_json(), "report")?;
    }
    if let Some((p, yaml)) = &recording {
        crate::error::write_output(p, yaml, "recording")?;
    }
    // Not `print!`: after a hang-up there is no terminal to print to.
    let mut out = io::stdout().lock();
    let _ = write!(out, "{}", summary(&report, &events, uptime));
    if let Some(p) = &opts.report {
        let _ = writeln!(out, "report written to {}", p.display());
    }
    if let Some((p, _)) = &recording {
        let _ = writeln!(
            out,
            "session recorded to {} (replay: chaoslab run TOPOLOGY --headless --scenario {})",
            p.display(),
            p.display()
        );
    }
    let _ = out.flush();
    Ok(())
}

/// The summary printed to the normal screen on quit.
pub fn summary(report: &Report, events: &[String], uptime: Duration) -> String {
    const SHOWN: usize = 12;
    let mut out = format!(
        "chaoslab dashboard closed after {}; figures since the warm-up or the last reset:\n",
        view::format::uptime(uptime)
    );
    out.push_str(&report.table());
    if !events.is_empty() {
        out.push_str("events:\n");
        if events.len() > SHOWN {
            out.push_str(&format!("  … {} earlier\n", events.len() - SHOWN));
        }
        for e in &events[events.len().saturating_sub(SHOWN)..] {
            out.push_str(&format!("  {e}\n"));
        }
    }
    out
}

/// How long the dashboard has to wind down after a signal before the
/// process exits on its own.
const SIGNAL_GRACE: Duration = Duration::from_secs(2);

/// SIGINT, SIGTERM and SIGHUP ask the dashboard to wind down (restore the
/// terminal, print the summary, write the report). A hang-up can leave
/// the main thread stuck reading a terminal that is gone (crossterm 0.29
/// retries a failing read forever), so if the dashboard has not wound
/// down after [`SIGNAL_GRACE`] the process exits here: nobody is left to
/// read a summary, and the fleet lives in this process.
async fn watch_signals(flag: Arc<AtomicBool>, ui_done: Arc<AtomicBool>) {
    #[cfg(unix)]
    let code = {
        use tokio::signal::unix::{signal, SignalKind};
        let (Ok(mut int), Ok(mut term), Ok(mut hup)) = (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
            signal(SignalKind::hangup()),
        ) else {
            return;
        };
        tokio::select! {
            _ = int.recv() => 130,
            _ = term.recv() => 143,
            _ = hup.recv() => 129,
        }
    };
    #[cfg(not(unix))]
    let code = {
        if tokio::signal::ctrl_c().await.is_err() {
            return;
        }
        130
    };
    flag.store(true, Ordering::SeqCst);
    tokio::time::sleep(SIGNAL_GRACE).await;
    if !ui_done.load(Ordering::SeqCst) {
        if ACTIVE.swap(false, Ordering::SeqCst) {
            restore_terminal();
        }
        std::process::exit(code);
    }
}

fn io_err(e: io::Error) -> RunError {
    RunError::Other(anyhow::anyhow!("the terminal failed: {e}"))
}

/// The main thread's loop: draw at `fps`, turn keys into actions.
fn ui_loop(
    terminal: &mut Terminal<CrosstermBackend<Stdout>>,
    mut snaps: watch::Receiver<Arc<Snapshot>>,
    actions: &mpsc::Sender<Action>,
    driver: &JoinHandle<Lab>,
    interrupted: &AtomicBool,
    fps: u32,
    color: bool,
) -> Result<(), RunError> {
    let frame = Duration::from_secs(1) / fps;
    let mut state = state::State::new();
    let mut snap = snaps.borrow_and_update().clone();
    let mut next_draw = Instant::now();
    let mut dirty = true;
    loop {
        if !ACTIVE.load(Ordering::SeqCst) {
            return Err(RunError::Other(anyhow::anyhow!(
                "a panic ended the dashboard (its message is above)"
            )));
        }
        if driver.is_finished() {
            return Err(RunError::Other(anyhow::anyhow!(
                "the lab's run loop stopped unexpectedly"
            )));
        }
        if interrupted.load(Ordering::SeqCst) || state.quit {
            return Ok(());
        }
        if snaps.has_changed().unwrap_or(false) {
            snap = snaps.borrow_and_update().clone();
            state.observe(&snap);
            dirty = true;
        }
        let now = Instant::now();
        // A frame at most every 1/fps, and only when something changed: a
        // snapshot (4 a second), a key or a resize. An unchanged screen is
        // not drawn again, which keeps the dashboard's CPU cost small.
        if now >= next_draw && dirty {
            terminal
                .draw(|f| view::draw(&state, &snap, f, color))
                .map_err(io_err)?;
            next_draw = now + frame;
            dirty = false;
        }
        // Wake for the next frame, or to look for a new snapshot.
        let wait = if dirty {
            next_draw.saturating_duration_since(Instant::now())
        } else {
            frame / 2
        };
        if event::poll(wait).map_err(io_err)? {
            // Drain everything waiting, then redraw at once.
            loop {
                match event::read().map_err(io_err)? {
                    TermEvent::Key(k) => {
                        if let Some(m) = keys::msg(k) {
                            if let Some(a) = update::update(&mut state, &snap, m) {
                                // Never block the UI on a busy run loop.
                                let _ = actions.try_send(a);
                            }
                        }
                    }
                    TermEvent::Resize(..) => {
                        terminal.autoresize().map_err(io_err)?;
                    }
                    _ => {}
                }
                dirty = true;
                if !event::poll(Duration::ZERO).map_err(io_err)? {
                    break;
                }
            }
            next_draw = Instant::now();
        }
    }
}

/// Whether the terminal is in the dashboard's modes (raw, alternate
/// screen) and so must be restored.
static ACTIVE: AtomicBool = AtomicBool::new(false);
static HOOK: Once = Once::new();

fn restore_terminal() {
    let _ = disable_raw_mode();
    let mut out = io::stdout();
    let _ = execute!(out, LeaveAlternateScreen, Show);
    let _ = out.flush();
}

/// Owns the terminal while the dashboard runs; dropping it restores the
/// terminal. A panic hook, installed once, restores it too before the
/// panic message is printed.
struct Guard {
    terminal: Terminal<CrosstermBackend<Stdout>>,
}

impl Guard {
    fn enter() -> io::Result<Guard> {
        HOOK.call_once(|| {
            let previous = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                if ACTIVE.swap(false, Ordering::SeqCst) {
                    restore_terminal();
                }
                previous(info);
            }));
        });
        enable_raw_mode()?;
        ACTIVE.store(true, Ordering::SeqCst);
        let setup = execute!(io::stdout(), EnterAlternateScreen, Hide)
            .and_then(|_| Terminal::new(CrosstermBackend::new(io::stdout())));
        match setup {
            Ok(terminal) => {
                // From here on, dropping the guard restores the terminal.
                let mut guard = Guard { terminal };
                guard.terminal.clear()?;
                Ok(guard)
            }
            Err(e) => {
                if ACTIVE.swap(false, Ordering::SeqCst) {
                    restore_terminal();
                }
                Err(e)
            }
        }
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if ACTIVE.swap(false, Ordering::SeqCst) {
            restore_terminal();
        }
    }
}
