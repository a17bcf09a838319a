//! The header and the table say what the lab is running: a saturated
//! machine, a closed loop of clients, a defence's columns.

use super::tests::{screen, text};
use crate::fixtures;
use crate::lab::figures::Figure;
use crate::state::State;

#[test]
fn a_closed_loop_shows_its_clients_and_what_they_send() {
    let mut s = fixtures::uber_chain_retry();
    s.think = Some(std::time::Duration::from_millis(500));
    s.state.rps = 100.0;
    s.root.rps = 61.0;
    let out = text(&screen(&State::new(), &s, 160, 45));
    assert!(
        out.contains("entry 50 clients offer 100 rps · 61 sent"),
        "{out}"
    );
    let small = text(&screen(&State::new(), &s, 80, 24));
    assert!(small.contains("entry 50 clients 100/61 rps"), "{small}");
}

#[test]
fn the_table_shows_a_defences_columns_only_when_it_is_in_the_fleet() {
    let plain = text(&screen(
        &State::new(),
        &fixtures::uber_chain_retry(),
        200,
        45,
    ));
    for title in ["limit", "throttled", "hedges cancelled"] {
        assert!(!plain.contains(title), "{title}: {plain}");
    }
    let mut s = fixtures::uber_chain_retry();
    for v in &mut s.services {
        v.live.set(Figure::ConcurrencyLimit, 37.0);
        v.total.set(Figure::ConcurrencyLimit, 37.0);
    }
    s.services[0].total.set(Figure::Throttled, 1695.0);
    s.services[1].total.set(Figure::HedgesCancelled, 12.0);
    let out = text(&screen(&State::new(), &s, 250, 45));
    for title in [
        "limit",
        "limited",
        "throttled",
        "hedges cancelled",
        "1695",
        " 37 ",
    ] {
        assert!(out.contains(title), "{title}: {out}");
    }
}

#[test]
fn a_saturated_lab_says_its_figures_are_lower_bounds() {
    let mut s = fixtures::uber_chain_retry();
    s.saturation = vec!["812 of 4000 root requests due were not sent (20.3%)".into()];
    let out = text(&screen(&State::new(), &s, 160, 45));
    assert!(
        out.contains("SATURATED  figures are lower bounds: 812 of 4000 root requests due"),
        "{out}"
    );
    let calm = text(&screen(
        &State::new(),
        &fixtures::uber_chain_retry(),
        160,
        45,
    ));
    assert!(!calm.contains("SATURATED"));
}
