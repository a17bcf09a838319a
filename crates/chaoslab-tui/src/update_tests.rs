//! `update`'s tests, key by key.

use super::*;
use crate::fixtures;
use crate::state::{Focus, SortKey};
use crate::topology::Phase;
use error_ownership::Attribution;

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
        Preset::Sre,
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
    assert!(!snap.state.policy.mode.budget_on && !snap.state.policy.mode.ownership);
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
    assert_eq!(
        (p.mode.retries, p.mode.budget_on, p.mode.ownership),
        (true, false, true)
    );
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
fn a_filter_is_typed_kept_and_cleared() {
    let snap = fixtures::uber_chain_retry();
    let mut st = State::new();
    update(&mut st, &snap, Msg::Filter);
    assert!(st.typing);
    for ch in "e".chars() {
        update(&mut st, &snap, Msg::Type(ch));
    }
    // "E" alone (any case): the selection moves onto it, and the keys
    // that follow act on it.
    assert_eq!(st.filter, "e");
    assert_eq!(snap.services[st.selected].name, "E");
    update(&mut st, &snap, Msg::TypeDone);
    assert!(!st.typing);
    assert_eq!(st.filter, "e");
    match update(&mut st, &snap, Msg::CycleFault) {
        Some(Action::SetFault { service, .. }) => assert_eq!(service, st.selected),
        other => panic!("{other:?}"),
    }
    update(&mut st, &snap, Msg::Filter);
    update(&mut st, &snap, Msg::TypeBack);
    assert_eq!(st.filter, "");
    update(&mut st, &snap, Msg::Type('x'));
    update(&mut st, &snap, Msg::Escape);
    assert!(!st.typing && st.filter.is_empty());
    // `A` lists the selected service and those above it; again, all.
    update(&mut st, &snap, Msg::ToggleAncestry);
    assert_eq!(st.order(&snap).len(), 5);
    update(&mut st, &snap, Msg::ToggleAncestry);
    assert_eq!(st.order(&snap).len(), snap.services.len());
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
