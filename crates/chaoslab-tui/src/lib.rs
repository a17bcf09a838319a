//! chaoslab's dashboard: what `chaoslab topologies/uber-chain.yaml` and
//! every chapter of `chaoslab tour` draw (their front ends start the
//! session and hand a [`Lab`] over it here).
//!
//! Why a crate of its own: a dashboard that can only read snapshots and
//! send actions cannot change what it shows. This crate links the model
//! and the terminal, never the fleet's HTTP stack (axum, hyper, reqwest):
//! the compiler keeps drawing apart from measuring, and a change to a
//! panel rebuilds only this crate.
//!
//! The fleet, its load and the run loop live on the tokio runtime's
//! worker threads; the dashboard lives on the main
//! thread and only ever (a) reads the newest [`Snapshot`](crate::lab::Snapshot) from the watch
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

pub mod cast;
pub mod error;
pub mod keys;
pub mod play;
pub mod state;
pub mod theme;
pub mod update;
pub mod view;

// The model's modules, named as this crate's code names them.
pub use chaoslab_model::{lab, report, scenario, topology};
pub use error::Error;

#[cfg(test)]
mod fixtures;

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
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
use tokio::runtime::Handle;
use tokio::sync::watch;
use tokio::time::Instant;

use crate::lab::{Snapshot, Steer};
use crate::report::Report;
use chaoslab_model::error::Interrupted;

/// A running lab as the dashboard sees it: the snapshots it publishes, a
/// way to steer it, and the runtime the dashboard's own tasks run on (the
/// signal watcher, a scenario's judge). The front end that started the
/// lab builds it.
pub struct Lab<'a> {
    /// The newest snapshot, published every tick.
    pub snapshots: watch::Receiver<Arc<Snapshot>>,
    /// Where the keys' actions go.
    pub steer: Arc<dyn Steer>,
    /// The lab's runtime.
    pub runtime: &'a Handle,
    /// Whether the lab's run loop has ended.
    pub finished: Box<dyn Fn() -> bool + 'a>,
}

/// How to draw the dashboard.
#[derive(Debug, Clone)]
pub struct Options {
    /// Frames per second (clamped to 1..=60).
    pub fps: u32,
    /// `--no-color` (the `NO_COLOR` variable is honoured as well).
    pub no_color: bool,
    /// Where `--metrics` and `--control` listen, shown in the help.
    pub listening: Vec<String>,
    /// `--cast FILE`: record the session as an asciicast v2 file.
    pub cast: Option<cast::Shared>,
    /// A scenario playing: where its run ends on the timeline's clock,
    /// and its expectations as judged.
    pub scenario: Option<(std::time::Duration, play::Verdicts)>,
    /// A chapter of `chaoslab tour`: Enter ends it for the next one.
    pub tour: bool,
    /// `--big`: the layout for a projector.
    pub big: bool,
    /// `--theme`: how the colours are rendered (`--no-color` and
    /// `NO_COLOR` win over it).
    pub theme: view::theme::Theme,
}

impl Options {
    /// Whether to draw in colour: not with `--no-color`, nor when
    /// `NO_COLOR` is set to anything non-empty (no-color.org).
    pub fn color(&self) -> bool {
        !self.no_color && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
    }
}

/// How a dashboard ended without an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// The person quit (`q`).
    Quit,
    /// The person asked for the tour's next chapter (Enter).
    Next,
}

/// Runs the dashboard over a session until the user quits, a signal
/// arrives or the run loop ends. The terminal is restored on return.
pub fn dashboard(lab: &Lab<'_>, opts: &Options) -> Result<Ended, Error> {
    // 0, or the exit status of the signal that came (130, 143, 129).
    let interrupted = Arc::new(AtomicU8::new(0));
    let ui_done = Arc::new(AtomicBool::new(false));
    lab.runtime
        .spawn(watch_signals(interrupted.clone(), ui_done.clone()));
    let outcome = match Guard::enter(opts.cast.clone()) {
        Ok(mut guard) => ui_loop(&mut guard.terminal, lab, &interrupted, opts),
        Err(e) => Err(Error::Terminal(e)),
    };
    // The guard is gone: the terminal is restored from here on.
    ui_done.store(true, Ordering::SeqCst);
    // The outcome first: a signal's exit status is not lost to a cast
    // that could not be written.
    let written = opts
        .cast
        .as_ref()
        .map_or(Ok(()), |c| cast::lock(c).finish());
    outcome.and_then(|ended| written.map(|()| ended))
}

/// The summary printed to the normal screen on quit: the report's table,
/// one per phase when a key changed the policy or a fault, then the
/// latest events.
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
async fn watch_signals(flag: Arc<AtomicU8>, ui_done: Arc<AtomicBool>) {
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
    flag.store(code as u8, Ordering::SeqCst);
    tokio::time::sleep(SIGNAL_GRACE).await;
    if !ui_done.load(Ordering::SeqCst) {
        if ACTIVE.swap(false, Ordering::SeqCst) {
            restore_terminal();
        }
        std::process::exit(code);
    }
}

fn io_err(e: io::Error) -> Error {
    Error::Terminal(e)
}

/// The main thread's loop: draw at `fps`, turn keys into actions.
fn ui_loop(
    terminal: &mut Terminal<CrosstermBackend<cast::Screen>>,
    lab: &Lab<'_>,
    interrupted: &AtomicU8,
    opts: &Options,
) -> Result<Ended, Error> {
    let (fps, color) = (opts.fps.clamp(1, 60), opts.color());
    let mut snaps = lab.snapshots.clone();
    let actions = &lab.steer;
    let frame = Duration::from_secs(1) / fps;
    let mut snap = snaps.borrow_and_update().clone();
    let mut state = state::State::opening(&snap);
    state.listening = opts.listening.clone();
    state.scenario_end = opts.scenario.as_ref().map(|(e, _)| *e);
    state.tour = opts.tour;
    state.big = opts.big;
    state.theme = opts.theme;
    let mut next_draw = Instant::now();
    let mut dirty = true;
    loop {
        if !ACTIVE.load(Ordering::SeqCst) {
            return Err(Error::Dashboard(
                "a panic ended the dashboard (its message is above)",
            ));
        }
        if (lab.finished)() {
            return Err(Error::Dashboard("the lab's run loop stopped unexpectedly"));
        }
        match interrupted.load(Ordering::SeqCst) {
            0 if state.quit && state.next_chapter => return Ok(Ended::Next),
            0 if state.quit => return Ok(Ended::Quit),
            0 => {}
            code => return Err(Interrupted::by_code(code).into()),
        }
        if snaps.has_changed().unwrap_or(false) {
            snap = snaps.borrow_and_update().clone();
            state.observe(&snap);
            if let Some((_, v)) = &opts.scenario {
                state.verdicts = v.now();
            }
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
                        let m = if state.typing && !state.help {
                            keys::typing(k)
                        } else {
                            keys::msg(k)
                        };
                        if let Some(m) = m {
                            match m {
                                keys::Msg::NextStep if !state.help => {
                                    actions.next_step();
                                }
                                keys::Msg::ToggleHold if !state.help => {
                                    let held = snap.timeline.as_ref().is_some_and(|t| t.held);
                                    actions.hold(!held);
                                }
                                keys::Msg::NextChapter if opts.tour && !state.help => {
                                    state.quit = true;
                                    state.next_chapter = true;
                                }
                                _ => {}
                            }
                            if let Some(a) = update::update(&mut state, &snap, m) {
                                // Never block the UI on a busy run loop.
                                actions.send(a);
                            }
                        }
                    }
                    TermEvent::Resize(w, h) => {
                        if let Some(c) = &opts.cast {
                            cast::lock(c).resized(w, h);
                        }
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
    terminal: Terminal<CrosstermBackend<cast::Screen>>,
}

impl Guard {
    fn enter(cast: Option<cast::Shared>) -> io::Result<Guard> {
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
            .and_then(|_| Terminal::new(CrosstermBackend::new(cast::Screen::new(cast))));
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
