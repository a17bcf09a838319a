//! `update`: a key's message changes the dashboard's state and, for keys
//! that change the lab, yields the one absolute [`Action`] to send to the
//! runner (the same vocabulary a scenario step uses). Plain functions, no
//! terminal, no fleet: tested below key by key.

use std::time::Duration;

use crate::lab::{Action, Snapshot};
use crate::topology::{Fault, PolicyFields, Preset, MAX_WORKERS};

use super::keys::Msg;
use super::state::{Beside, State, WINDOWS};
use crate::lab::LabState;

/// The latency the fault cycle injects: past the default 1 s timeout, so
/// callers see timeouts (errors with no claim).
pub const INJECTED_LATENCY: Duration = Duration::from_millis(1500);

/// The latency `l` adds to the selected service's fault and `L` removes.
pub const LATENCY_STEP: Duration = Duration::from_millis(100);

/// Entry rates `+` and `-` step through; beyond them, steps of 25%.
pub const RATE_STEPS: [f64; 24] = [
    1.0, 2.0, 5.0, 10.0, 20.0, 25.0, 50.0, 75.0, 100.0, 150.0, 200.0, 250.0, 300.0, 400.0, 500.0,
    600.0, 800.0, 1000.0, 1200.0, 1500.0, 2000.0, 2500.0, 3000.0, 4000.0,
];

/// Rows a page key moves.
const PAGE: usize = 10;

/// Applies one message. Returns the action to send to the runner, if the
/// message changes the lab; the state then shows its effect at once.
pub fn update(state: &mut State, snap: &Snapshot, msg: Msg) -> Option<Action> {
    if state.help {
        match msg {
            Msg::Help | Msg::Escape => state.help = false,
            Msg::Quit => state.quit = true,
            _ => {}
        }
        return None;
    }
    let c = state.controls(snap);
    let sel = state.selected.min(snap.services.len().saturating_sub(1));
    let action = match msg {
        Msg::Quit => {
            state.quit = true;
            None
        }
        Msg::Help => {
            state.help = true;
            None
        }
        Msg::ToggleTap => {
            state.beside = state.beside.toggled(Beside::Tap);
            None
        }
        Msg::ToggleReplicas => {
            state.beside = state.beside.toggled(Beside::Replicas);
            None
        }
        Msg::ToggleRoots => {
            state.beside = state.beside.toggled(Beside::Roots);
            None
        }
        // The timeline's keys are the run loop's, not the lab's: the
        // dashboard's loop sends them (see `tui::ui_loop`).
        Msg::NextStep | Msg::ToggleHold | Msg::NextChapter => None,
        // Esc leaves a filter being typed, and shows every service again.
        Msg::Escape => {
            state.typing = false;
            state.filter.clear();
            state.ancestry = None;
            None
        }
        Msg::Filter => {
            state.typing = true;
            None
        }
        Msg::Type(ch) => {
            state.filter.push(ch);
            keep_selection_listed(state, snap);
            None
        }
        Msg::TypeBack => {
            state.filter.pop();
            keep_selection_listed(state, snap);
            None
        }
        Msg::TypeDone => {
            state.typing = false;
            None
        }
        Msg::ToggleAncestry => {
            state.ancestry = match state.ancestry {
                Some(_) => None,
                None => Some(sel),
            };
            state.follow = false;
            None
        }
        Msg::FocusNext => {
            state.focus = state.focus.next();
            None
        }
        Msg::FocusPrev => {
            state.focus = state.focus.prev();
            None
        }
        Msg::Up | Msg::Down | Msg::PageUp | Msg::PageDown | Msg::Home | Msg::End => {
            navigate(state, snap, msg);
            None
        }
        Msg::Sort => {
            state.sort = state.sort.next();
            state.descending = state.sort.descending_by_default();
            None
        }
        Msg::SortReverse => {
            state.descending = !state.descending;
            None
        }
        Msg::WindowShorter => {
            state.window = state.window.saturating_sub(1);
            None
        }
        Msg::WindowLonger => {
            state.window = (state.window + 1).min(WINDOWS.len() - 1);
            None
        }
        Msg::CycleFault => fault_action(&c, sel, next_fault),
        Msg::ErrorDown => fault_action(&c, sel, |f| step_error_rate(f, -1)),
        Msg::ErrorUp => fault_action(&c, sel, |f| step_error_rate(f, 1)),
        Msg::ToggleDown => fault_action(&c, sel, |f| Fault {
            down: !f.down,
            ..f.clone()
        }),
        Msg::ToggleContext => c
            .context_dropped
            .get(sel)
            .map(|&d| Action::SetContextDropped {
                service: sel,
                dropped: !d,
            }),
        Msg::WorkersDown => workers_action(&c, sel, -1),
        Msg::WorkersUp => workers_action(&c, sel, 1),
        Msg::LatencyUp => fault_action(&c, sel, |f| Fault {
            latency: f.latency.saturating_add(LATENCY_STEP),
            ..f.clone()
        }),
        Msg::LatencyDown => fault_action(&c, sel, |f| Fault {
            latency: f.latency.saturating_sub(LATENCY_STEP),
            ..f.clone()
        }),
        Msg::Preset(p) => Some(preset(p)),
        Msg::CyclePreset => Some(preset(next_preset(c.policy.preset()))),
        Msg::ToggleBudget => Some(Action::Mode {
            retries: None,
            budget: Some(!c.policy.mode.budget_on),
            ownership: None,
        }),
        Msg::ToggleOwnership => Some(Action::Mode {
            retries: None,
            budget: None,
            ownership: Some(!c.policy.mode.ownership),
        }),
        Msg::ToggleAtLeastOnce => Some(Action::SetAtLeastOnce(!c.at_least_once)),
        Msg::CycleAttribution => Some(Action::SetAttribution(c.attribution.next())),
        Msg::RateUp => Some(Action::SetRps(rate_up(c.rps))),
        Msg::RateDown => Some(Action::SetRps(rate_down(c.rps))),
        Msg::Pause => Some(Action::Pause(!c.paused)),
        Msg::Reset => Some(Action::Reset),
    };
    if let Some(a) = &action {
        state.sent(snap, a);
    }
    action
}

/// A filter just changed: the selection moves to the first service it
/// lists when it no longer lists the selected one (the keys act on what
/// the table shows).
fn keep_selection_listed(state: &mut State, snap: &Snapshot) {
    let order = state.order(snap);
    if !order.contains(&state.selected) {
        if let Some(&first) = order.first() {
            state.selected = first;
        }
    }
}

fn navigate(state: &mut State, snap: &Snapshot, msg: Msg) {
    use super::state::Focus;
    state.follow = false;
    match state.focus {
        Focus::Table | Focus::Topology => {
            let order = state.order(snap);
            if order.is_empty() {
                return;
            }
            let at = order.iter().position(|&i| i == state.selected).unwrap_or(0);
            let last = order.len() - 1;
            let to = match msg {
                Msg::Up => at.saturating_sub(1),
                Msg::Down => (at + 1).min(last),
                Msg::PageUp => at.saturating_sub(PAGE),
                Msg::PageDown => (at + PAGE).min(last),
                Msg::Home => 0,
                _ => last,
            };
            state.selected = order[to];
        }
        Focus::Charts => match msg {
            Msg::Up | Msg::PageUp | Msg::End => {
                state.window = (state.window + 1).min(WINDOWS.len() - 1)
            }
            _ => state.window = state.window.saturating_sub(1),
        },
        Focus::Log => {
            let most = snap.events.len().saturating_sub(1);
            state.log_scroll = match msg {
                Msg::Up => state.log_scroll + 1,
                Msg::Down => state.log_scroll.saturating_sub(1),
                Msg::PageUp => state.log_scroll + PAGE,
                Msg::PageDown => state.log_scroll.saturating_sub(PAGE),
                Msg::Home => most,
                _ => 0,
            }
            .min(most);
        }
    }
}

fn fault_action(c: &LabState, sel: usize, change: impl Fn(&Fault) -> Fault) -> Option<Action> {
    c.faults.get(sel).map(|f| Action::SetFault {
        service: sel,
        fault: change(f),
    })
}

/// The selected service's workers `by` more (or fewer), never below 1
/// nor above [`MAX_WORKERS`]: no action on a service without workers, or
/// at a bound.
fn workers_action(c: &LabState, sel: usize, by: i64) -> Option<Action> {
    let now = c.resources.get(sel)?.workers?;
    let to = (i64::from(now) + by).clamp(1, i64::from(MAX_WORKERS)) as u32;
    (to != now).then_some(Action::Set {
        service: sel,
        workers: Some(to),
        work: None,
        queue: None,
    })
}

fn preset(p: Preset) -> Action {
    Action::Policy(PolicyFields {
        preset: Some(p),
        ..PolicyFields::default()
    })
}

/// The preset after `p` in key order (a mix no preset names starts over).
pub fn next_preset(p: Option<Preset>) -> Preset {
    match p {
        Some(p) => {
            let i = Preset::ALL.iter().position(|q| *q == p).unwrap_or(0);
            Preset::ALL[(i + 1) % Preset::ALL.len()]
        }
        None => Preset::None,
    }
}

/// The fault after `f` in the `f` cycle: off → 100% → 50% → 10% errors →
/// latency → down → off. Rates in between go to the next lower step. The
/// phase and status a topology gave the service are kept.
pub fn next_fault(f: &Fault) -> Fault {
    let base = Fault {
        error_rate: 0.0,
        latency: Duration::ZERO,
        down: false,
        ..f.clone()
    };
    let eps = 1e-9;
    if f.down {
        base
    } else if f.error_rate > 0.5 + eps {
        Fault {
            error_rate: 0.5,
            ..base
        }
    } else if f.error_rate > 0.1 + eps {
        Fault {
            error_rate: 0.1,
            ..base
        }
    } else if f.error_rate > 0.0 {
        Fault {
            latency: INJECTED_LATENCY,
            ..base
        }
    } else if !f.latency.is_zero() {
        Fault { down: true, ..base }
    } else {
        Fault {
            error_rate: 1.0,
            ..base
        }
    }
}

/// The error rate `steps` × 10 points away, on the 10-point grid, within 0..1.
pub fn step_error_rate(f: &Fault, steps: i32) -> Fault {
    let tenths = (f.error_rate * 10.0).round() as i32 + steps;
    Fault {
        error_rate: f64::from(tenths.clamp(0, 10)) / 10.0,
        ..f.clone()
    }
}

/// The next entry rate up.
pub fn rate_up(r: f64) -> f64 {
    RATE_STEPS
        .iter()
        .copied()
        .find(|&s| s > r + 1e-9)
        .unwrap_or_else(|| (r * 1.25).round())
}

/// The next entry rate down (never below the smallest step).
pub fn rate_down(r: f64) -> f64 {
    let last = RATE_STEPS[RATE_STEPS.len() - 1];
    if r > last * 1.25 {
        return (r / 1.25).round();
    }
    RATE_STEPS
        .iter()
        .rev()
        .copied()
        .find(|&s| s < r - 1e-9)
        .unwrap_or(RATE_STEPS[0])
}

#[cfg(test)]
#[path = "update_tests.rs"]
mod tests;
