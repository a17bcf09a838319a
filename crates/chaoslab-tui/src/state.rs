//! What the dashboard remembers between frames: the selection, the sort,
//! the focused panel, the overlays, and the lab's state as a key just
//! changed it (folded by the lab's own [`apply`], shown at once, before the
//! runner's next snapshot confirms it).
//!
//! Nothing here touches a terminal or the fleet; [`super::update`] changes
//! it and [`super::view`] reads it.

use std::time::Duration;

use crate::lab::figures::Figure;
use crate::lab::{apply, Action, LabState, Snapshot};
use crate::topology::ServiceId;

use super::view::theme::Theme;

/// How long a key's effect is trusted over the snapshots that follow it:
/// the runner applies an action at once, but publishes it with its next
/// tick (every 250 ms), so two ticks later every snapshot shows it.
pub const PENDING_FOR: Duration = Duration::from_millis(750);

/// The chart windows `<` and `>` step through, in seconds.
pub const WINDOWS: [usize; 4] = [15, 30, 60, 120];

/// What the panel beside the charts shows. One at a time: each key
/// (`t`, `v`, `u`) shows its view there, and shows the log again when
/// its view is already shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Beside {
    /// The event log.
    #[default]
    Log,
    /// The wire tap.
    Tap,
    /// The selected service's replicas.
    Replicas,
    /// The roots of a topology of many.
    Roots,
}

impl Beside {
    /// `view` in place of the log, or the log again if `view` is shown.
    pub fn toggled(self, view: Beside) -> Beside {
        if self == view {
            Beside::Log
        } else {
            view
        }
    }
}

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
    /// Load above baseline, in requests per second: the storm first (a
    /// service called once a minute that got two calls reads 2×, not a
    /// storm). The first sort of a mesh of many roots.
    Storm,
}

impl SortKey {
    /// Every key, in the order `s` steps through them.
    pub const ALL: [SortKey; 7] = [
        SortKey::Depth,
        SortKey::Rps,
        SortKey::Amplification,
        SortKey::Errors,
        SortKey::Retries,
        SortKey::Suppressed,
        SortKey::Storm,
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
            SortKey::Storm => "load over baseline",
        }
    }

    /// Whether this key naturally sorts largest first.
    pub fn descending_by_default(self) -> bool {
        self != SortKey::Depth
    }
}

/// Controls changed by keys, trusted until a snapshot at `until` or later.
#[derive(Debug, Clone, PartialEq)]
pub struct Pending {
    /// The lab's state after the keys.
    pub controls: LabState,
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
    /// Where `--metrics` and `--control` listen (shown in the help).
    pub listening: Vec<String>,
    /// What the panel beside the charts shows: the event log, or one of
    /// the views a key puts in its place.
    pub beside: Beside,
    /// A scenario playing: its expectations as judged so far (empty when
    /// none is).
    pub verdicts: Vec<crate::play::Judged>,
    /// A scenario is playing: where its run ends on the timeline's clock
    /// (warm-up included).
    pub scenario_end: Option<std::time::Duration>,
    /// A chapter of the tour: Enter moves on.
    pub tour: bool,
    /// Enter was pressed in a tour: the next chapter, not the end.
    pub next_chapter: bool,
    /// `--big`: the layout for the back of the room (see [`super::view::big`]).
    pub big: bool,
    /// `--theme`: how the colours are rendered.
    pub theme: Theme,
    /// The table lists only services whose name holds this (`/`), any
    /// case.
    pub filter: String,
    /// `/` was pressed: keys type into [`State::filter`] until Enter or
    /// Esc.
    pub typing: bool,
    /// `A`: the table lists this service and every service above it,
    /// nearest first.
    pub ancestry: Option<ServiceId>,
    /// The selection follows the table's first row (a mesh opens on its
    /// storm) until a key moves it.
    pub follow: bool,
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
            listening: vec![],
            beside: Beside::Log,
            verdicts: vec![],
            scenario_end: None,
            tour: false,
            next_chapter: false,
            big: false,
            theme: Theme::Dark,
            filter: String::new(),
            typing: false,
            ancestry: None,
            follow: false,
        }
    }
}

impl State {
    /// A state for a fresh dashboard.
    pub fn new() -> State {
        State::default()
    }

    /// The state a dashboard opens on `first`: a mesh of more than
    /// [`crate::lab::roots::MESH_ROOTS`] roots sorted by the storm, largest first; any other
    /// topology by depth, its call path top to bottom.
    pub fn opening(first: &Snapshot) -> State {
        use crate::lab::roots::MESH_ROOTS;
        let mut s = State::default();
        if first.roots.len() > MESH_ROOTS {
            s.sort = SortKey::Storm;
            s.descending = true;
            s.follow = true;
            s.observe(first);
        }
        s
    }

    /// The chart window.
    pub fn window_secs(&self) -> usize {
        WINDOWS[self.window.min(WINDOWS.len() - 1)]
    }

    /// The controls as the dashboard believes them: what keys just set,
    /// or else what the snapshot shows.
    pub fn controls(&self, s: &Snapshot) -> LabState {
        match &self.pending {
            Some(p) if p.controls.faults.len() == s.services.len() => p.controls.clone(),
            _ => s.state.clone(),
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
        if self.follow {
            if let Some(&first) = self.order(s).first() {
                self.selected = first;
            }
        }
    }

    /// Records that an action was sent at snapshot time `t`.
    pub fn sent(&mut self, s: &Snapshot, a: &Action) {
        let mut c = self.controls(s);
        // The fold the lab runs: a key's effect shows at once, and one the
        // lab would refuse shows nothing.
        let _ = apply(&mut c, a);
        self.pending = Some(Pending {
            controls: c,
            until: s.t + PENDING_FOR,
        });
    }

    /// Service ids in the table's order: those the filter and the
    /// ancestry leave, sorted by the key (under `A`, nearest first and
    /// then by the key).
    pub fn order(&self, s: &Snapshot) -> Vec<ServiceId> {
        let n = s.services.len();
        let (mut ids, hops): (Vec<ServiceId>, Vec<usize>) = match self.ancestry {
            Some(a) if a < n => {
                let hops = above(s, a);
                ((0..n).filter(|&i| hops[i] != usize::MAX).collect(), hops)
            }
            _ => ((0..n).collect(), vec![]),
        };
        if !self.filter.is_empty() {
            let want = self.filter.to_lowercase();
            ids.retain(|&i| s.services[i].name.to_lowercase().contains(&want));
        }
        let key = |i: ServiceId| -> f64 {
            let v = &s.services[i];
            match self.sort {
                SortKey::Depth => v.depth as f64,
                SortKey::Rps => v.live[Figure::Rps],
                SortKey::Amplification => v.amplification().unwrap_or(0.0),
                SortKey::Errors => v.live[Figure::ErrorRate],
                SortKey::Retries => v.total[Figure::RetriesSent],
                SortKey::Suppressed => v.total[Figure::RetriesSuppressed],
                SortKey::Storm => crate::lab::roots::beyond_chance(&v.live),
            }
        };
        let hop = |i: ServiceId| hops.get(i).copied().unwrap_or(0);
        // A stable sort: ties keep the topology order.
        ids.sort_by(|&a, &b| {
            let o = key(a).total_cmp(&key(b));
            hop(a)
                .cmp(&hop(b))
                .then(if self.descending { o.reverse() } else { o })
        });
        ids
    }
}

/// How many calls up from `id` each service is (`usize::MAX`: it never
/// calls `id`, directly or through others): 0 for `id`, 1 for its
/// callers, 2 for theirs, up to the roots. A breadth-first walk over the
/// snapshot's calls, reversed.
pub fn above(s: &Snapshot, id: ServiceId) -> Vec<usize> {
    let n = s.services.len();
    let mut callers: Vec<Vec<usize>> = vec![vec![]; n];
    for e in &s.edges {
        if e.from < n && e.to < n {
            callers[e.to].push(e.from);
        }
    }
    let mut hops = vec![usize::MAX; n];
    let mut queue = std::collections::VecDeque::from([id]);
    hops[id] = 0;
    while let Some(x) = queue.pop_front() {
        for &c in &callers[x] {
            if hops[c] == usize::MAX {
                hops[c] = hops[x] + 1;
                queue.push_back(c);
            }
        }
    }
    hops
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;
    use crate::lab::roots::MESH_ROOTS;

    #[test]
    fn a_mesh_opens_on_its_storm_and_a_chain_on_its_call_path() {
        let chain = fixtures::uber_chain_retry();
        let st = State::opening(&chain);
        assert_eq!((st.sort, st.descending), (SortKey::Depth, false));

        // Seven roots make a mesh: the table opens on the load above
        // baseline, largest first, not on a rarely called service's ratio.
        let mut mesh = fixtures::uber_chain_retry();
        let root = fixtures::multi_root_endpoints().roots[0].clone();
        mesh.roots = vec![root; MESH_ROOTS + 2];
        // A: 1 call a second where it had 0.1 (10×, 0.9 rps above).
        mesh.services[0].live.set(Figure::Rps, 1.0);
        mesh.services[0].live.set(Figure::BaselineRps, 0.1);
        fixtures::derive(&mut mesh);
        let st = State::opening(&mesh);
        assert_eq!((st.sort, st.descending), (SortKey::Storm, true));
        let order = st.order(&mesh);
        let excess = |i: ServiceId| crate::lab::roots::beyond_chance(&mesh.services[i].live);
        assert!(order.windows(2).all(|w| excess(w[0]) >= excess(w[1])));
        // Under naive retries D..G carry 7× the entry's rate above their
        // baseline: the storm leads, A (10× of almost nothing) trails it.
        assert_eq!(mesh.services[order[0]].name, "D");
        assert!(order.iter().position(|&i| i == 0) > order.iter().position(|&i| i == 3));
        // The selection opens on the storm, and follows it until a key
        // moves it.
        assert_eq!(st.selected, order[0]);
    }

    #[test]
    fn the_filter_and_the_ancestry_narrow_the_table() {
        let snap = fixtures::uber_chain_retry();
        let name = |ids: Vec<ServiceId>| -> Vec<String> {
            ids.iter().map(|&i| snap.services[i].name.clone()).collect()
        };
        let mut st = State::opening(&snap);
        // The chain A..G: D's callers are C, then B, then A; E..G are below.
        let d = snap.services.iter().position(|v| v.name == "D").unwrap();
        st.ancestry = Some(d);
        assert_eq!(name(st.order(&snap)), ["D", "C", "B", "A"]);
        let hops = above(&snap, d);
        assert_eq!(hops[0], 3);
        assert_eq!(hops[4], usize::MAX);
        // The filter, any case, on top of it.
        st.filter = "c".into();
        assert_eq!(name(st.order(&snap)), ["C"]);
        st.ancestry = None;
        st.filter = "F".into();
        assert_eq!(name(st.order(&snap)), ["F"]);
        st.filter = "nothing".into();
        assert!(st.order(&snap).is_empty());
    }
}
