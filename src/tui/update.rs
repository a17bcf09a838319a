//! `update`: a key's message changes the dashboard's state and, for keys
//! that change the lab, yields the one absolute [`Action`] to send to the
//! runner (the same vocabulary a scenario step uses). Plain functions, no
//! terminal, no fleet: tested below key by key.

use std::time::Duration;

use crate::lab::{Action, Snapshot};
use crate::topology::{Fault, PolicyFields, Preset, MAX_WORKERS};

use super::keys::Msg;
use super::state::{State, WINDOWS};
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
            state.tap = !state.tap;
            (state.replicas, state.roots) = (false, false);
            None
        }
        Msg::ToggleReplicas => {
            state.replicas = !state.replicas;
            (state.tap, state.roots) = (false, false);
            None
        }
        Msg::ToggleRoots => {
            state.roots = !state.roots;
            (state.tap, state.replicas) = (false, false);
            None
        }
        // The timeline's keys are the run loop's, not the lab's: the
        // dashboard's loop sends them (see `tui::ui_loop`).
        Msg::NextStep | Msg::ToggleHold | Msg::NextChapter => None,
        Msg::Escape => None,
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
            budget: Some(!c.policy.budget_on),
            ownership: None,
        }),
        Msg::ToggleOwnership => Some(Action::Mode {
            retries: None,
            budget: None,
            ownership: Some(!c.policy.ownership),
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

fn navigate(state: &mut State, snap: &Snapshot, msg: Msg) {
    use super::state::Focus;
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
mod tests {
    use super::*;
    use crate::ownership::Attribution;
    use crate::topology::Phase;
    use crate::tui::fixtures;
    use crate::tui::state::{Focus, SortKey};

    fn d_selected() -> (State, Snapshot) {
        let snap = fixtures::uber_chain_retry();
        let mut st = State::new();
        for _ in 0..3 {
            update(&mut st, &snap, Msg::Down);
        }
        assert_eq!(snap.services[st.selected].name, "D");
        (st, snap)
    }

    #[test]
    fn j_and_k_walk_the_table_in_its_order_and_stop_at_the_ends() {
        let snap = fixtures::uber_chain_healthy();
        let mut st = State::new();
        assert_eq!(update(&mut st, &snap, Msg::Up), None);
        assert_eq!(st.selected, 0);
        update(&mut st, &snap, Msg::Down);
        update(&mut st, &snap, Msg::Down);
        assert_eq!(st.selected, 2);
        update(&mut st, &snap, Msg::End);
        assert_eq!(st.selected, 6);
        update(&mut st, &snap, Msg::Down);
        assert_eq!(st.selected, 6);
        update(&mut st, &snap, Msg::Home);
        assert_eq!(st.selected, 0);
    }

    #[test]
    fn sorting_changes_the_order_selection_follows_and_keeps_the_service() {
        let snap = fixtures::uber_chain_retry();
        let mut st = State::new();
        update(&mut st, &snap, Msg::Down); // B
        update(&mut st, &snap, Msg::Sort); // by rps, largest first
        assert_eq!(st.sort, SortKey::Rps);
        assert!(st.descending);
        assert_eq!(st.selected, 1, "the selection is a service, not a row");
        let order = st.order(&snap);
        assert_eq!(
            snap.services[order[0]].live[crate::lab::figures::Figure::Rps],
            1600.8
        );
        assert_eq!(snap.services[*order.last().unwrap()].name, "A");
        update(&mut st, &snap, Msg::Home);
        assert_eq!(st.selected, order[0]);
        update(&mut st, &snap, Msg::SortReverse);
        assert_eq!(snap.services[st.order(&snap)[0]].name, "A");
    }

    #[test]
    fn f_cycles_the_selected_fault_and_keeps_its_phase() {
        let (mut st, snap) = d_selected();
        let d = st.selected;
        let mut seen = vec![];
        for _ in 0..6 {
            match update(&mut st, &snap, Msg::CycleFault) {
                Some(Action::SetFault { service, fault }) => {
                    assert_eq!(service, d);
                    assert_eq!(fault.phase, Phase::After);
                    seen.push((fault.error_rate, fault.latency, fault.down));
                }
                other => panic!("expected a fault, got {other:?}"),
            }
        }
        // D starts at 100%: the cycle goes on from there, pressed quickly,
        // without waiting for a snapshot between presses.
        assert_eq!(
            seen,
            [
                (0.5, Duration::ZERO, false),
                (0.1, Duration::ZERO, false),
                (0.0, INJECTED_LATENCY, false),
                (0.0, Duration::ZERO, true),
                (0.0, Duration::ZERO, false),
                (1.0, Duration::ZERO, false),
            ]
        );
        assert_eq!(st.controls(&snap).faults[d].error_rate, 1.0);
    }

    #[test]
    fn e_and_shift_e_step_ten_points_within_bounds() {
        let (mut st, snap) = d_selected();
        let rate = |a: Option<Action>| match a {
            Some(Action::SetFault { fault, .. }) => fault.error_rate,
            other => panic!("{other:?}"),
        };
        assert_eq!(rate(update(&mut st, &snap, Msg::ErrorUp)), 1.0);
        assert_eq!(rate(update(&mut st, &snap, Msg::ErrorDown)), 0.9);
        assert_eq!(rate(update(&mut st, &snap, Msg::ErrorDown)), 0.8);
        for _ in 0..12 {
            update(&mut st, &snap, Msg::ErrorDown);
        }
        assert_eq!(st.controls(&snap).faults[st.selected].error_rate, 0.0);
        assert_eq!(rate(update(&mut st, &snap, Msg::ErrorUp)), 0.1);
    }

    #[test]
    fn x_toggles_down_and_c_toggles_the_context_of_the_selected_service() {
        let (mut st, snap) = d_selected();
        let d = st.selected;
        match update(&mut st, &snap, Msg::ToggleDown) {
            Some(Action::SetFault { service, fault }) => {
                assert_eq!(service, d);
                assert!(fault.down);
            }
            other => panic!("{other:?}"),
        }
        match update(&mut st, &snap, Msg::ToggleDown) {
            Some(Action::SetFault { fault, .. }) => assert!(!fault.down),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            update(&mut st, &snap, Msg::ToggleContext),
            Some(Action::SetContextDropped {
                service: d,
                dropped: true
            })
        );
        assert_eq!(
            update(&mut st, &snap, Msg::ToggleContext),
            Some(Action::SetContextDropped {
                service: d,
                dropped: false
            })
        );
    }

    fn db_selected() -> (State, Snapshot) {
        let snap = fixtures::metastable_storm();
        let mut st = State::new();
        update(&mut st, &snap, Msg::Down);
        assert_eq!(snap.services[st.selected].name, "DB");
        (st, snap)
    }

    #[test]
    fn w_and_shift_w_change_the_workers_of_the_selected_service() {
        let (mut st, snap) = db_selected();
        let set = |workers| {
            Some(Action::Set {
                service: 1,
                workers: Some(workers),
                work: None,
                queue: None,
            })
        };
        assert_eq!(update(&mut st, &snap, Msg::WorkersUp), set(5));
        assert_eq!(update(&mut st, &snap, Msg::WorkersDown), set(4));
        // Pressed quickly: each press folds into the last one's state.
        for w in [3, 2, 1] {
            assert_eq!(update(&mut st, &snap, Msg::WorkersDown), set(w));
        }
        assert_eq!(st.controls(&snap).resources[1].workers, Some(1));
        assert_eq!(
            update(&mut st, &snap, Msg::WorkersDown),
            None,
            "never below one worker"
        );
        // A has no workers: nothing to change.
        update(&mut st, &snap, Msg::Home);
        assert_eq!(update(&mut st, &snap, Msg::WorkersUp), None);
        assert_eq!(update(&mut st, &snap, Msg::WorkersDown), None);
        assert_eq!(st.controls(&snap).resources[0].workers, None);
    }

    #[test]
    fn l_and_shift_l_add_and_remove_latency_and_keep_the_rest_of_the_fault() {
        let (mut st, snap) = d_selected();
        let d = st.selected;
        let latency = |a: Option<Action>| match a {
            Some(Action::SetFault { service, fault }) => {
                assert_eq!(service, d);
                assert_eq!(fault.error_rate, 1.0, "the error rate is kept");
                fault.latency
            }
            other => panic!("{other:?}"),
        };
        let ms = Duration::from_millis;
        assert_eq!(latency(update(&mut st, &snap, Msg::LatencyUp)), ms(100));
        assert_eq!(latency(update(&mut st, &snap, Msg::LatencyUp)), ms(200));
        assert_eq!(latency(update(&mut st, &snap, Msg::LatencyDown)), ms(100));
        assert_eq!(latency(update(&mut st, &snap, Msg::LatencyDown)), ms(0));
        assert_eq!(latency(update(&mut st, &snap, Msg::LatencyDown)), ms(0));
        assert_eq!(st.controls(&snap).faults[d].latency, Duration::ZERO);
    }

    #[test]
    fn number_keys_pick_presets_and_p_cycles_them() {
        let snap = fixtures::uber_chain_retry();
        let mut st = State::new();
        assert_eq!(
            update(&mut st, &snap, Msg::Preset(Preset::Ownership)),
            Some(preset(Preset::Ownership))
        );
        assert_eq!(st.controls(&snap).policy.preset(), Some(Preset::Ownership));
        // `p` goes on to the industry's presets, then starts over.
        for next in [
            Preset::Finagle,
            Preset::Envoy,
            Preset::Grpc,
            Preset::Aws,
            Preset::Aws2026,
            Preset::None,
            Preset::Retry,
        ] {
            assert_eq!(update(&mut st, &snap, Msg::CyclePreset), Some(preset(next)));
            assert_eq!(st.controls(&snap).policy.preset(), Some(next));
        }
        assert_eq!(next_preset(None), Preset::None);
    }

    #[test]
    fn b_and_o_toggle_one_switch_and_keep_the_others() {
        let snap = fixtures::uber_chain_retry();
        let mut st = State::new();
        assert!(!snap.state.policy.budget_on && !snap.state.policy.ownership);
        assert_eq!(
            update(&mut st, &snap, Msg::ToggleBudget),
            Some(Action::Mode {
                retries: None,
                budget: Some(true),
                ownership: None
            })
        );
        assert_eq!(st.controls(&snap).policy.preset(), Some(Preset::Budget));
        assert_eq!(
            update(&mut st, &snap, Msg::ToggleOwnership),
            Some(Action::Mode {
                retries: None,
                budget: None,
                ownership: Some(true)
            })
        );
        assert_eq!(st.controls(&snap).policy.preset(), Some(Preset::Ownership));
        update(&mut st, &snap, Msg::ToggleBudget);
        let p = st.controls(&snap).policy;
        assert_eq!((p.retries, p.budget_on, p.ownership), (true, false, true));
        assert_eq!(p.mode_name(), "retry+ownership");
    }

    #[test]
    fn a_m_space_r_and_the_rate_keys() {
        let snap = fixtures::uber_chain_retry();
        let mut st = State::new();
        assert_eq!(
            update(&mut st, &snap, Msg::ToggleAtLeastOnce),
            Some(Action::SetAtLeastOnce(false))
        );
        assert_eq!(
            update(&mut st, &snap, Msg::CycleAttribution),
            Some(Action::SetAttribution(Attribution::Learned))
        );
        assert_eq!(
            update(&mut st, &snap, Msg::CycleAttribution),
            Some(Action::SetAttribution(Attribution::Simple))
        );
        assert_eq!(
            update(&mut st, &snap, Msg::Pause),
            Some(Action::Pause(true))
        );
        assert_eq!(
            update(&mut st, &snap, Msg::Pause),
            Some(Action::Pause(false))
        );
        assert_eq!(update(&mut st, &snap, Msg::Reset), Some(Action::Reset));
        assert_eq!(
            update(&mut st, &snap, Msg::RateUp),
            Some(Action::SetRps(250.0))
        );
        assert_eq!(
            update(&mut st, &snap, Msg::RateUp),
            Some(Action::SetRps(300.0))
        );
        assert_eq!(
            update(&mut st, &snap, Msg::RateDown),
            Some(Action::SetRps(250.0))
        );
    }

    #[test]
    fn rate_steps_are_round_and_bounded_below() {
        assert_eq!(rate_up(200.0), 250.0);
        assert_eq!(rate_up(210.0), 250.0);
        assert_eq!(rate_down(210.0), 200.0);
        assert_eq!(rate_down(1.0), 1.0);
        assert_eq!(rate_down(0.5), 1.0);
        assert_eq!(rate_up(4000.0), 5000.0);
        assert_eq!(rate_down(5000.0), 4000.0);
        assert_eq!(rate_down(10000.0), 8000.0);
    }

    #[test]
    fn pending_controls_give_way_to_the_snapshot_that_shows_them() {
        let mut snap = fixtures::uber_chain_retry();
        let mut st = State::new();
        update(&mut st, &snap, Msg::Preset(Preset::Ownership));
        assert!(st.pending.is_some());
        snap.t += Duration::from_millis(250);
        st.observe(&snap);
        assert!(
            st.pending.is_some(),
            "a tick later the key's effect still shows"
        );
        assert_eq!(st.controls(&snap).policy.preset(), Some(Preset::Ownership));
        snap.t += Duration::from_secs(1);
        st.observe(&snap);
        assert_eq!(st.pending, None);
        // Now the snapshot rules (this one was never told).
        assert_eq!(st.controls(&snap).policy.preset(), Some(Preset::Retry));
    }

    #[test]
    fn help_captures_keys_until_closed() {
        let snap = fixtures::uber_chain_retry();
        let mut st = State::new();
        update(&mut st, &snap, Msg::Help);
        assert!(st.help);
        assert_eq!(update(&mut st, &snap, Msg::Reset), None);
        assert_eq!(update(&mut st, &snap, Msg::Down), None);
        assert_eq!(st.selected, 0);
        update(&mut st, &snap, Msg::Escape);
        assert!(!st.help);
        update(&mut st, &snap, Msg::Help);
        update(&mut st, &snap, Msg::Quit);
        assert!(st.quit);
    }

    #[test]
    fn tab_moves_focus_and_arrows_act_on_the_focused_panel() {
        let snap = fixtures::uber_chain_retry();
        let mut st = State::new();
        update(&mut st, &snap, Msg::FocusNext);
        assert_eq!(st.focus, Focus::Topology);
        update(&mut st, &snap, Msg::Down);
        assert_eq!(st.selected, 1);
        update(&mut st, &snap, Msg::FocusNext);
        assert_eq!(st.focus, Focus::Charts);
        let w = st.window_secs();
        update(&mut st, &snap, Msg::Down);
        assert!(st.window_secs() < w);
        update(&mut st, &snap, Msg::FocusNext);
        assert_eq!(st.focus, Focus::Log);
        update(&mut st, &snap, Msg::Up);
        assert_eq!(st.log_scroll, 1);
        update(&mut st, &snap, Msg::Home);
        assert_eq!(st.log_scroll, snap.events.len() - 1);
        update(&mut st, &snap, Msg::End);
        assert_eq!(st.log_scroll, 0);
        update(&mut st, &snap, Msg::FocusNext);
        assert_eq!(st.focus, Focus::Table);
        update(&mut st, &snap, Msg::FocusPrev);
        assert_eq!(st.focus, Focus::Log);
        update(&mut st, &snap, Msg::Quit);
        assert!(st.quit);
    }

    #[test]
    fn window_keys_stay_within_the_steps() {
        let snap = fixtures::uber_chain_retry();
        let mut st = State::new();
        for _ in 0..9 {
            update(&mut st, &snap, Msg::WindowLonger);
        }
        assert_eq!(st.window_secs(), 120);
        for _ in 0..9 {
            update(&mut st, &snap, Msg::WindowShorter);
        }
        assert_eq!(st.window_secs(), 15);
    }
}
