//! Recording: a session's event log → a scenario file that replays the
//! same actions at the same times, so an exploratory demo becomes a CI test
//! (`--record session.yaml`, then `--scenario session.yaml`).
//!
//! Actions are absolute, so each one is written with every field it sets:
//! a fault as all of its keys, not as "what changed". The file therefore
//! replays to the same state whatever the topology's own faults are. Times
//! are kept to the millisecond, and the file says `warmup: 0s` so they land
//! on the lab's clock exactly where they were recorded.
//!
//! ```
//! use std::time::Duration;
//! use chaoslab_model::scenario::{record::to_scenario_yaml, Scenario};
//! use chaoslab_model::lab::{Action, Event, Origin};
//! use chaoslab_model::topology::{Preset, PolicyFields, Topology};
//!
//! let t = Topology::from_yaml("name: t\nservices:\n  A: { calls: [B] }\n  B:\n", "t.yaml").unwrap();
//! let action = Action::Policy(PolicyFields { preset: Some(Preset::Budget), ..Default::default() });
//! let events = [Event { t: Duration::from_millis(1500), text: "policy budget".into(), action: action.clone(), origin: Origin::Operator }];
//! let yaml = to_scenario_yaml(&t, &events, Duration::from_secs(5));
//! assert!(yaml.contains("  - at: 1.5s"));
//! let back = Scenario::from_yaml(&yaml, "session.yaml", &t).unwrap();
//! assert_eq!(back.steps[0].action, action);
//! assert_eq!(back.steps[0].at, Duration::from_millis(1500));
//! ```

use std::fmt::Write as _;
use std::time::Duration;

use crate::lab::step::{as_step, quote};
use crate::lab::Event;
use crate::topology::Topology;

/// The recording of a finished run: from the state it started in (so it
/// replays the same whatever flags the replay is given), then every
/// action applied, at its time.
pub fn of_run(record: &crate::lab::RunRecord) -> String {
    let mut all: Vec<Event> = record
        .start
        .actions()
        .into_iter()
        .map(|action| Event {
            t: Duration::ZERO,
            text: action.describe(&record.topology),
            action,
            origin: crate::lab::Origin::Operator,
        })
        .collect();
    all.extend(record.events.iter().cloned());
    to_scenario_yaml(&record.topology, &all, record.uptime)
}

/// A scenario file that replays `events` at their times (to the ms) on
/// `topology`, for a run of `duration` (at least as long as the last
/// event).
pub fn to_scenario_yaml(topology: &Topology, events: &[Event], duration: Duration) -> String {
    let mut y = String::new();
    let _ = writeln!(
        y,
        "# A chaoslab session on topology {}, recorded as a scenario.",
        one_line(&topology.name)
    );
    let _ = writeln!(
        y,
        "# Replay: chaoslab run TOPOLOGY --headless --scenario THIS_FILE"
    );
    let _ = writeln!(
        y,
        "# Times count from the start of the session (warmup: 0s keeps them there)."
    );
    let _ = writeln!(
        y,
        "description: {}",
        quote(&format!(
            "Recorded session on {} ({} actions)",
            topology.name,
            events.len()
        ))
    );
    let last = events.iter().map(|e| millis(e.t)).max().unwrap_or(0);
    let run = millis(duration).max(last);
    let _ = writeln!(y, "duration: {}", seconds(run));
    let _ = writeln!(y, "warmup: 0s");
    let mut steps = String::new();
    for e in events {
        let Some(body) = as_step(topology, &e.action) else {
            let _ = writeln!(
                steps,
                "  # at {}: {} (nothing to replay)",
                seconds(millis(e.t)),
                one_line(&e.text)
            );
            continue;
        };
        let _ = writeln!(
            steps,
            "  - at: {}  # {}\n    {body}",
            seconds(millis(e.t)),
            one_line(&e.text)
        );
    }
    if steps.contains("- at:") {
        let _ = writeln!(y, "steps:");
        y.push_str(&steps);
    } else {
        let _ = writeln!(y, "steps: []");
        y.push_str(&steps);
    }
    let _ = writeln!(
        y,
        "# expect:  # add checks, e.g.\n#   - during: 5s..10s\n#     root_availability: {{ min: 0.99 }}"
    );
    y
}

/// Rounded to the millisecond.
fn millis(d: Duration) -> u128 {
    (d.as_nanos() + 500_000) / 1_000_000
}

/// `1.5s`, `12s`, `0.001s`.
fn seconds(ms: u128) -> String {
    if ms % 1000 == 0 {
        format!("{}s", ms / 1000)
    } else {
        let s = format!("{}.{:03}", ms / 1000, ms % 1000);
        format!("{}s", s.trim_end_matches('0'))
    }
}

fn one_line(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::exact;
    use crate::lab::Action;
    use crate::scenario::Scenario;
    use crate::topology::{
        BreakerSetting, BudgetSetting, Fault, Phase, PolicyFields, Preset, SignalSetting,
    };
    use error_ownership::Attribution;

    fn topology() -> Topology {
        Topology::from_yaml(
            "name: t\nservices:\n  A: { calls: [\"b: 1\"] }\n  \"b: 1\": { calls: [\"true\"] }\n  \"true\":\n    fault: { error_rate: 0.5, latency: 5ms }\n",
            "t.yaml",
        )
        .unwrap()
    }

    fn ev(ms: u64, action: Action) -> Event {
        Event {
            t: Duration::from_millis(ms) + Duration::from_nanos(123_456),
            text: "line one\nline two".into(),
            action,
            origin: crate::lab::Origin::Operator,
        }
    }

    /// A policy action that sets every field, each away from its
    /// default.
    fn every_policy_field() -> PolicyFields {
        PolicyFields {
            preset: Some(Preset::Budget),
            attempts: Some(3),
            budget: Some(BudgetSetting::Ratio(0.2)),
            min_per_sec: Some(1.5),
            ttl: Some(Duration::from_secs(5)),
            backoff: Some(Duration::from_millis(10)),
            timeout: Some(Duration::from_nanos(1_000_000_001)),
            deadline: Some(true),
            budget_model: Some(crate::topology::BudgetKind::Tokens),
            signal: Some(SignalSetting::On(error_ownership::signal::Signal::Pushback)),
            budget_percent: Some(25.0),
            min_retry_concurrency: Some(4),
            max_tokens: Some(20),
            token_ratio: Some(0.2),
            quota: Some(300),
            retry_cost: Some(7),
            timeout_cost: Some(12),
            breaker: Some(BreakerSetting::On(
                error_ownership::breaker::BreakerConfig {
                    consecutive: 7,
                    open_for: Duration::from_millis(2500),
                    ..error_ownership::breaker::BreakerConfig::DEFAULT
                },
            )),
            throttle: Some(crate::topology::ThrottleSetting::On(
                error_ownership::throttle::ThrottleConfig {
                    k: 1.5,
                    window: Duration::from_millis(30_500),
                },
            )),
            hedge: Some(crate::topology::HedgeSetting::On(
                error_ownership::hedge::HedgeConfig {
                    delay: Duration::from_millis(40),
                    max_attempts: 3,
                    non_fatal: false,
                },
            )),
            outlier: Some(Box::new(crate::topology::OutlierSetting::On(
                error_ownership::outlier::OutlierConfig {
                    consecutive_5xx: 3,
                    interval: Duration::from_millis(1500),
                    count: error_ownership::outlier::Count::Claimed,
                    ..error_ownership::outlier::OutlierConfig::DEFAULT
                },
            ))),
            lb: Some(error_ownership::policy::Lb::P2c),
            retry_other_host: Some(false),
            retry_on: Some(Box::new(crate::topology::policy::ISTIO_RETRY_ON)),
        }
    }

    #[test]
    fn every_action_round_trips() {
        let t = topology();
        let events = vec![
            ev(
                250,
                Action::SetFault {
                    service: 2,
                    fault: Fault {
                        error_rate: 0.3,
                        phase: Phase::Before,
                        latency: Duration::from_micros(1500),
                        status: 503,
                        down: false,
                        replicas: None,
                        endpoint: None,
                    },
                },
            ),
            ev(
                1001,
                Action::SetFault {
                    service: 1,
                    fault: Fault {
                        down: true,
                        ..Fault::default()
                    },
                },
            ),
            ev(
                2000,
                Action::SetFault {
                    service: 2,
                    fault: Fault::default(),
                },
            ),
            ev(
                2000,
                Action::SetContextDropped {
                    service: 1,
                    dropped: true,
                },
            ),
            ev(
                3333,
                Action::SetContextDropped {
                    service: 1,
                    dropped: false,
                },
            ),
            ev(
                4000,
                Action::Policy(PolicyFields {
                    preset: Some(Preset::Retry),
                    ..Default::default()
                }),
            ),
            ev(4500, Action::Policy(every_policy_field())),
            ev(
                4600,
                Action::Policy(PolicyFields {
                    budget: Some(BudgetSetting::Off),
                    ..Default::default()
                }),
            ),
            ev(
                5000,
                Action::Mode {
                    retries: None,
                    budget: Some(false),
                    ownership: Some(true),
                },
            ),
            ev(6000, Action::SetAtLeastOnce(false)),
            ev(6100, Action::SetAttribution(Attribution::Learned)),
            ev(7000, Action::SetRps(412.5)),
            ev(8000, Action::Pause(true)),
            ev(8500, Action::Pause(false)),
            ev(9000, Action::Reset),
        ];
        let yaml = to_scenario_yaml(&t, &events, Duration::from_secs(12));
        let back = Scenario::from_yaml(&yaml, "session.yaml", &t)
            .unwrap_or_else(|e| panic!("{e}\n{yaml}"));
        assert_eq!(back.duration, Some(Duration::from_secs(12)));
        assert_eq!(back.warmup, Some(Duration::ZERO));
        let got: Vec<(Duration, Action)> =
            back.steps.into_iter().map(|s| (s.at, s.action)).collect();
        let want: Vec<(Duration, Action)> = events
            .iter()
            .map(|e| (Duration::from_millis(millis(e.t) as u64), e.action.clone()))
            .collect();
        assert_eq!(got, want, "\n{yaml}");
        assert!(
            yaml.contains("  - at: 1.001s  # line one line two\n"),
            "{yaml}"
        );
        assert!(yaml.contains("service: \"b: 1\""), "{yaml}");
        assert!(yaml.contains("drop_context: \"b: 1\""), "{yaml}");
        assert!(yaml.contains("service: \"true\""), "{yaml}");
    }

    #[test]
    fn a_set_line_round_trips() {
        let t = Topology::from_yaml(
            "name: m\nservices:\n  A: { calls: [DB] }\n  DB: { workers: 4, work: 25ms }\n",
            "m.yaml",
        )
        .unwrap();
        let set = |workers, work: Option<Duration>, queue| Action::Set {
            service: 1,
            workers,
            work,
            queue,
        };
        let events = vec![
            ev(
                1000,
                set(Some(2), Some(Duration::from_millis(25)), Some(100)),
            ),
            ev(2000, set(Some(1), None, None)),
            ev(3000, set(None, Some(Duration::from_micros(1500)), None)),
            ev(4000, set(None, None, Some(0))),
            ev(
                5000,
                Action::Set {
                    service: 0,
                    workers: None,
                    work: Some(Duration::from_millis(5)),
                    queue: None,
                },
            ),
        ];
        let yaml = to_scenario_yaml(&t, &events, Duration::from_secs(6));
        assert!(
            yaml.contains("    set: { service: DB, workers: 2, work: 25ms, queue: 100 }\n"),
            "{yaml}"
        );
        let back = Scenario::from_yaml(&yaml, "session.yaml", &t)
            .unwrap_or_else(|e| panic!("{e}\n{yaml}"));
        let got: Vec<Action> = back.steps.into_iter().map(|s| s.action).collect();
        let want: Vec<Action> = events.into_iter().map(|e| e.action).collect();
        assert_eq!(got, want, "\n{yaml}");
    }

    #[test]
    fn no_ops_are_comments_and_the_duration_covers_every_event() {
        let t = topology();
        let events = vec![
            ev(30_000, Action::Policy(PolicyFields::default())),
            ev(
                31_000,
                Action::Mode {
                    retries: None,
                    budget: None,
                    ownership: None,
                },
            ),
        ];
        let yaml = to_scenario_yaml(&t, &events, Duration::from_secs(5));
        assert!(yaml.contains("duration: 31s"), "{yaml}");
        assert!(yaml.contains("steps: []"), "{yaml}");
        let back = Scenario::from_yaml(&yaml, "s.yaml", &t).unwrap();
        assert!(back.steps.is_empty());
        let empty = to_scenario_yaml(&t, &[], Duration::from_millis(2500));
        let back = Scenario::from_yaml(&empty, "s.yaml", &t).unwrap();
        assert_eq!(back.duration, Some(Duration::from_millis(2500)));
    }

    #[test]
    fn formats_are_exact() {
        assert_eq!(seconds(1500), "1.5s");
        assert_eq!(seconds(12_000), "12s");
        assert_eq!(seconds(1), "0.001s");
        assert_eq!(exact(Duration::from_nanos(1_000_000_001)), "1000000001ns");
        assert_eq!(exact(Duration::from_micros(1500)), "1500us");
        assert_eq!(quote("D"), "D");
        assert_eq!(quote("no"), "\"no\"");
        assert_eq!(quote("1a"), "\"1a\"");
    }
}
