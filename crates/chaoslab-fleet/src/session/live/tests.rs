//! Tests of the live lab (`live/mod.rs`).
use std::cell::RefCell;
use std::time::Duration;

use proptest::prelude::*;

use super::*;
use crate::lab::state::Resources;
use crate::topology::{BudgetSetting, Fault, Phase, PolicyFields, Preset};
use error_ownership::Attribution;

fn action() -> impl Strategy<Value = Action> {
    // Service 3 does not exist: those actions must be refused by both.
    let service = 0usize..4;
    prop_oneof![
        (
            service.clone(),
            0.0f64..=1.0,
            any::<bool>(),
            any::<bool>(),
            0u64..3
        )
            .prop_map(|(service, error_rate, after, down, latency)| {
                Action::SetFault {
                    service,
                    fault: Fault {
                        error_rate,
                        phase: if after { Phase::After } else { Phase::Before },
                        latency: Duration::from_millis(latency * 100),
                        down,
                        ..Fault::default()
                    },
                }
            }),
        (service, any::<bool>())
            .prop_map(|(service, dropped)| Action::SetContextDropped { service, dropped }),
        (0usize..4, 0u32..4, prop::option::of(0.0f64..0.5)).prop_map(|(p, a, b)| {
            Action::Policy(PolicyFields {
                preset: Some(Preset::ALL[p]),
                attempts: Some(a),
                budget: Some(b.map_or(BudgetSetting::Off, BudgetSetting::Ratio)),
                ..PolicyFields::default()
            })
        }),
        (
            prop::option::of(any::<bool>()),
            prop::option::of(any::<bool>()),
            prop::option::of(any::<bool>())
        )
            .prop_map(|(retries, budget, ownership)| Action::Mode {
                retries,
                budget,
                ownership
            }),
        any::<bool>().prop_map(Action::SetAtLeastOnce),
        (0usize..3).prop_map(|i| Action::SetAttribution(
            [
                Attribution::Simple,
                Attribution::Declared,
                Attribution::Learned
            ][i]
        )),
        (-10.0f64..500.0).prop_map(Action::SetRps),
        (
            0usize..4,
            prop::option::of(0u32..5),
            prop::option::of(0u64..3),
            prop::option::of(0u32..100)
        )
            .prop_map(|(service, workers, work, queue)| Action::Set {
                service,
                workers,
                work: work.map(Duration::from_millis),
                queue,
            }),
        any::<bool>().prop_map(Action::Pause),
        Just(Action::Reset),
    ]
}

/// What the fleet and the load actually run, read back from them.
fn running(lab: &Live) -> LabState {
    let n = lab.topology.services.len();
    LabState {
        policy: lab.fleet.policy(),
        attribution: lab.fleet.attribution(),
        at_least_once: lab.fleet.at_least_once(),
        rps: lab.control.rps(),
        paused: lab.control.paused(),
        faults: (0..n).map(|i| lab.fleet.fault(i)).collect(),
        context_dropped: (0..n).map(|i| lab.fleet.context_dropped(i)).collect(),
        resources: (0..n)
            .map(|i| {
                let (workers, work, queue) = lab.fleet.resources(i);
                Resources {
                    workers,
                    work,
                    queue,
                }
            })
            .collect(),
        groups: lab.topology.services.iter().map(|s| s.group).collect(),
    }
}

#[test]
fn the_running_lab_and_the_fold_agree_on_every_sequence() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let t = Topology::from_yaml(
        "name: t\nload: { rps: 10 }\nservices:\n  A: { calls: [B] }\n  B: { calls: [C] }\n  C: { workers: 2, work: 1ms }\n",
        "t.yaml",
    )
    .unwrap();
    let opts = LiveOptions {
        load: false,
        ..LiveOptions::default()
    };
    let lab = RefCell::new(rt.block_on(Live::start(t, opts)).unwrap());
    // The lab applies actions on the runtime (fewer workers are taken
    // back by a task).
    let _inside = rt.enter();
    let config = ProptestConfig {
        cases: 64,
        ..ProptestConfig::default()
    };
    proptest!(config, |(actions in prop::collection::vec(action(), 1..24))| {
        let mut lab = lab.borrow_mut();
        let mut folded = lab.state().clone();
        for a in &actions {
            let by_fold = state::apply(&mut folded, a);
            let by_lab = lab.apply(a.clone());
            prop_assert_eq!(by_fold.is_ok(), by_lab.is_ok(), "{:?}", a);
        }
        prop_assert_eq!(lab.state(), &folded);
        // The lab made the fleet and the load match what it folded.
        prop_assert_eq!(&running(&lab), &folded);
        // And the topology the model reads carries the same state.
        let written = LabState { paused: folded.paused, ..LabState::of(lab.topology()) };
        prop_assert_eq!(written, folded);
    });
    rt.block_on(lab.into_inner().finish(Duration::ZERO, vec![], QUIT_GRACE));
}
