//! SIGINT and SIGTERM in the front ends that run without a terminal
//! (headless `run`, `compare`, `serve`): the first stops the session, so
//! the run ends as if its time were up (the table printed, the reports
//! written over what ran, marked interrupted), and the process then
//! exits 130 or 143; a second signal exits at once.
//!
//! One watcher serves the whole process, whichever session runs at the
//! moment (`compare` runs several, one after another).

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

use signal_hook::consts::{SIGINT, SIGTERM};
use tokio::sync::watch;

pub use crate::error::Interrupted;

/// The process's interrupt state: which signal came first, if any, and
/// the session it stops.
#[derive(Debug, Clone)]
pub struct Interrupts {
    /// 0 until a signal arrives, then its exit status (130, 143).
    code: Arc<AtomicU8>,
    stop: Arc<Mutex<Option<watch::Sender<bool>>>>,
}

fn exit_code(signal: i32) -> u8 {
    if signal == SIGTERM {
        143
    } else {
        130
    }
}

impl Interrupts {
    /// Starts watching SIGINT and SIGTERM for the rest of the process. If
    /// the handlers cannot be installed, the signals keep their default
    /// (the process ends at once), and the reason is printed.
    pub fn watch() -> Interrupts {
        let i = Interrupts {
            code: Arc::new(AtomicU8::new(0)),
            stop: Arc::new(Mutex::new(None)),
        };
        match signal_hook::iterator::Signals::new([SIGINT, SIGTERM]) {
            Ok(mut signals) => {
                let (code, stop) = (i.code.clone(), i.stop.clone());
                std::thread::spawn(move || {
                    for signal in signals.forever() {
                        let c = exit_code(signal);
                        if code
                            .compare_exchange(0, c, Ordering::SeqCst, Ordering::SeqCst)
                            .is_err()
                        {
                            // A second signal: the user means it. Nothing
                            // is dropped on the way out: the sidecars go
                            // first.
                            crate::sidecar::kill_all();
                            std::process::exit(i32::from(code.load(Ordering::SeqCst)));
                        }
                        eprintln!(
                            "{}: stopping; the table and reports will cover what ran (again to quit at once)",
                            if c == 143 { "SIGTERM" } else { "SIGINT" }
                        );
                        if let Some(s) = stop.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
                            let _ = s.send(true);
                        }
                    }
                });
            }
            Err(e) => eprintln!(
                "chaoslab: cannot watch SIGINT and SIGTERM ({e}): they will end the run at once"
            ),
        }
        i
    }

    /// Makes the first signal stop the session whose stop switch is
    /// `stopper` (replacing the one attached before); a signal that came
    /// already stops it now.
    pub fn attach(&self, stopper: watch::Sender<bool>) {
        if self.interrupted() {
            let _ = stopper.send(true);
        }
        *self.stop.lock().unwrap_or_else(|e| e.into_inner()) = Some(stopper);
    }

    /// Whether a signal has come.
    pub fn interrupted(&self) -> bool {
        self.code.load(Ordering::SeqCst) != 0
    }

    /// `Err` with the signal that came, if one did (the results are
    /// already printed and written).
    pub fn outcome(&self) -> Result<(), Interrupted> {
        match self.code.load(Ordering::SeqCst) {
            0 => Ok(()),
            code => Err(Interrupted::by_code(code)),
        }
    }
}
