//! A run as its command line and its scenario describe it: the session's
//! setup, the expectations to judge, and where the scenario ends. The
//! headless runner, the dashboard and the tour all start their runs so.

use std::time::Duration;

use super::{RunArgs, DEFAULT_DURATION};
use crate::error::RunError;
use crate::lab::expect::Expectation;
use crate::scenario::Scenario;
use crate::session::Setup;
use crate::topology::Topology;

/// A run prepared from the command line and its scenario.
#[derive(Debug)]
pub struct Prepared {
    /// How to start the session.
    pub setup: Setup,
    /// The scenario's expectations.
    pub expectations: Vec<Expectation>,
    /// Where the scenario's run ends on the lab's clock (its warm-up and
    /// duration), when a scenario plays.
    pub end: Option<Duration>,
    /// The warm-up.
    pub warmup: Duration,
}

impl RunArgs {
    /// The run of `topology` with `scenario` (if any) under this command
    /// line. `until_end`: the session stops where the scenario's run
    /// ends (headless); otherwise it stays open until it is stopped (a
    /// dashboard: the person quits).
    pub fn prepare(
        &self,
        topology: Topology,
        scenario: Option<&Scenario>,
        until_end: bool,
    ) -> Result<Prepared, RunError> {
        let warmup = self.warmup(scenario.and_then(|s| s.warmup));
        let Some(sc) = scenario else {
            let setup = self
                .setup(topology, vec![], vec![], warmup, None)
                .map_err(RunError::usage)?;
            return Ok(Prepared {
                setup,
                expectations: vec![],
                end: None,
                warmup,
            });
        };
        let duration = self
            .clock
            .duration
            .or(sc.duration)
            .unwrap_or(DEFAULT_DURATION);
        sc.check_duration(duration, self.clock.duration.is_some())
            .map_err(RunError::input)?;
        let mut setup = self
            .setup(
                topology,
                sc.initial_actions(),
                sc.plan_steps(warmup),
                warmup,
                until_end.then_some(duration),
            )
            .map_err(RunError::usage)?;
        setup.captions = sc.plan_captions(warmup);
        Ok(Prepared {
            setup,
            expectations: sc.expectations.clone(),
            end: Some(warmup + duration),
            warmup,
        })
    }
}
