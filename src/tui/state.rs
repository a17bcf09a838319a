//! What the dashboard remembers between frames: the selection, the sort,
//! the focused panel, the overlays, and the controls a key just changed
//! (shown at once, before the runner's next snapshot confirms them).
//!
//! Nothing here touches a terminal or the fleet; [`super::update`] changes
//! it and [`super::view`] reads it.

use std::time::Duration;

use crate::ownership::Attribution;
use crate::scenario::{Action, Snapshot};
use crate::topology::{Fault, Policy, ServiceId};

/// How long a key's effect is trusted over the snapshots that follow it:
/// the runner applies an action at once, but publishes it with its next
/// tick (every 250 ms), so two ticks later every snapshot shows it.
pub const PENDING_FOR: Duration = Duration::from_millis(750);

/// The chart windows `<` and `>` step through, in seconds.
pub const WINDOWS: [usize; 4] = [15, 30, 60, 120];

/// The panel that arrow keys act on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Focus {
    /// The service table: arrows select a service.
    Table,
    /// The topology view: arrows select a service.
    Topology,
    /// The charts: arrows change the time window.
    Charts,
    /// The event log: arrows scroll it.
    Log,
}

impl Focus {
    /// Every panel, in `Tab` order.
    pub const ALL: [Focus; 4] = [Focus::Table, Focus::Topology, Focus::Charts, Focus::Log];

    /// The next panel (`Tab`).
    pub fn next(self) -> Focus {
        let i = Focus::ALL.iter().position(|f| *f == self).unwrap_or(0);
        Focus::ALL[(i + 1) % Focus::ALL.len()]
    }

    /// The previous panel (`Shift-Tab`).
    pub fn prev(self) -> Focus {
        let i = Focus::ALL.iter().position(|f| *f == self).unwrap_or(0);
        Focus::ALL[(i + Focus::ALL.len() - 1) % Focus::ALL.len()]
    }
}

/// What the service table is sorted by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortKey {
    /// Depth, then topology order: the call path top to bottom.
    Depth,
    /// Requests per second.
    Rps,
    /// Amplification.
    Amplification,
    /// Error rate.
    Errors,
    /// Retries sent.
    Retries,
    /// Retries suppressed.
    Suppressed,
}

impl SortKey {
    /// Every key, in the order `s` steps through them.
    pub const ALL: [SortKey; 6] = [
        SortKey::Depth,
        SortKey::Rps,
        SortKey::Amplification,
        SortKey::Errors,
        SortKey::Retries,
        SortKey::Suppressed,
    ];

    /// The next key (`s`).
    pub fn next(self) -> SortKey {
        let i = SortKey::ALL.iter().position(|k| *k == self).unwrap_or(0);
        SortKey::ALL[(i + 1) % SortKey::ALL.len()]
    }

    /// Its name in the table's title.
    pub fn name(self) -> &'static str {
        match self {
            SortKey::Depth => "depth",
            SortKey::Rps => "rps",
            SortKey::Amplification => "amplification",
            SortKey::Errors => "errors",
            SortKey::Retries => "retries",
            SortKey::Suppressed => "suppressed",
        }
    }

    /// Whether this key naturally sorts largest first.
    pub fn descending_by_default(self) -> bool {
        self != SortKey::Depth
    }
}

/// The settings the keys change, as the dashboard believes them to be.
#[derive(Debug, Clone, PartialEq)]
pub struct Controls {
    /// The fleet-wide policy.
    pub policy: Policy,
    /// Rule 5.
    pub at_least_once: bool,
    /// The attribution mode.
    pub attribution: Attribution,
    /// The entry rate offered.
    pub rps: f64,
    /// Load paused.
    pub paused: bool,
    /// Each service's fault.
    pub faults: Vec<Fault>,
    /// Each service's context dropped.
    pub context: Vec<bool>,
}

impl Controls {
    /// The controls a snapshot shows.
    pub fn of(s: &Snapshot) -> Controls {
        Controls {
            policy: s.policy.clone(),
            at_least_once: s.at_least_once,
            attribution: s.attribution,
            rps: s.root.offered_rps,
            paused: s.paused,
            faults: s.services.iter().map(|v| v.fault.clone()).collect(),
            context: s.services.iter().map(|v| v.context_dropped).collect(),
        }
    }

    /// Applies an action the way the lab does (`Lab::apply`).
    pub fn apply(&mut self, a: &Action) {
        match a {
            Action::SetFault { service, fault } => {
                if let Some(f) = self.faults.get_mut(*service) {
                    *f = fault.clone();
                }
            }
            Action::SetContextDropped { service, dropped } => {
                if let Some(c) = self.context.get_mut(*service) {
                    *c = *dropped;
                }
            }
            Action::Policy(fields) => self.policy.apply_fields(fields),
            Action::Mode {
                retries,
                budget,
                ownership,
            } => {
                if let Some(r) = retries {
                    self.policy.retries = *r;
                }
                if let Some(b) = budget {
                    self.policy.budget_on = *b;
                }
                if let Some(o) = ownership {
                    self.policy.ownership = *o;
                }
            }
            Action::SetAtLeastOnce(on) => self.at_least_once = *on,
            Action::SetAttribution(m) => self.attribution = *m,
            Action::SetRps(r) => self.rps = r.max(0.0),
            Action::Pause(p) => self.paused = *p,
            Action::Reset => {}
        }
    }
}

/// Controls changed by keys, trusted until a snapshot at `until` or later.
#[derive(Debug, Clone, PartialEq)]
pub struct Pending {
    /// The controls after the keys.
    pub controls: Controls,
    /// Snapshot time from which the snapshots show them.
    pub until: Duration,
}

/// The dashboard's state.
#[derive(Debug, Clone, PartialEq)]
pub struct State {
    /// The selected service.
    pub selected: ServiceId,
    /// The table's sort key.
    pub sort: SortKey,
    /// Largest first.
    pub descending: bool,
    /// The focused panel.
    pub focus: Focus,
    /// The help overlay is open.
    pub help: bool,
    /// Index into [`WINDOWS`].
    pub window: usize,
    /// Event log lines scrolled back from the newest.
    pub log_scroll: usize,
    /// The user asked to quit.
    pub quit: bool,
    /// Controls changed by keys, not yet confirmed by a snapshot.
    pub pending: Option<Pending>,
}

impl Default for State {
    fn default() -> Self {
        State {
            selected: 0,
            sort: SortKey::Depth,
            descending: false,
            focus: Focus::Table,
            help: false,
            window: 2,
            log_scroll: 0,
            quit: false,
            pending: None,
        }
    }
}

impl State {
    /// A state for a fresh dashboard.
    pub fn new() -> State {
        State::default()
    }

    /// The chart window.
    pub fn window_secs(&self) -> usize {
        WINDOWS[self.window.min(WINDOWS.len() - 1)]
    }

    /// The controls as the dashboard believes them: what keys just set,
    /// or else what the snapshot shows.
    pub fn controls(&self, s: &Snapshot) -> Controls {
        match &self.pending {
            Some(p) if p.controls.faults.len() == s.services.len() => p.controls.clone(),
            _ => Controls::of(s),
        }
    }

    /// Takes note of a new snapshot: forgets pending controls it now
    /// shows, and keeps the selection in range.
    pub fn observe(&mut self, s: &Snapshot) {
        if self.pending.as_ref().is_some_and(|p| s.t >= p.until) {
            self.pending = None;
        }
        if self.selected >= s.services.len() {
            self.selected = s.services.len().saturating_sub(1);
        }
    }

    /// Records that an action was sent at snapshot time `t`.
    pub fn sent(&mut self, s: &Snapshot, a: &Action) {
        let mut c = self.controls(s);
        c.apply(a);
        self.pending = Some(Pending {
            controls: c,
            until: s.t + PENDING_FOR,
        });
    }

    /// Service ids in the table's order.
    pub fn order(&self, s: &Snapshot) -> Vec<ServiceId> {
        let mut ids: Vec<ServiceId> = (0..s.services.len()).collect();
        let key = |i: ServiceId| -> f64 {
            let v = &s.services[i];
            match self.sort {
                SortKey::Depth => v.depth as f64,
                SortKey::Rps => v.rps,
                SortKey::Amplification => v.amplification.unwrap_or(0.0),
                SortKey::Errors => v.error_rate,
                SortKey::Retries => v.retries_sent as f64,
                SortKey::Suppressed => v.retries_suppressed as f64,
            }
        };
        // A stable sort: ties keep the topology order.
        ids.sort_by(|&a, &b| {
            let o = key(a).total_cmp(&key(b));
            if self.descending {
                o.reverse()
            } else {
                o
            }
        });
        ids
    }
}
