//! `chaoslab tap TOPOLOGY --service C`: the fleet under load, headless,
//! printing the selected service's exchanges as the wire carries them
//! (the dashboard's wire-tap panel, `t`, as lines):
//!
//! ```text
//! service C http://127.0.0.1:41234/
//!   1.3s  C → D  500  x-error-claim: true  (retried)
//!   1.3s  B → C  500  x-error-claim: false  (not retried: unclaimed)
//! ```
//!
//! Sampled: at most one exchange per call edge every 100 ms. Under
//! `--processes` each node samples its own calls and the session reads
//! them (times are when the lines arrived, about a read round of 100 ms
//! after the call).

use std::io::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use crate::error::RunError;
use crate::launch::{launch, Launched};
use crate::options;
use crate::session::Setup;
use crate::topology::Topology;

/// How long a tap runs without `--duration`.
const DEFAULT: Duration = Duration::from_secs(10);

/// What `chaoslab tap` is asked to run and show.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// The topology file.
    pub topology: PathBuf,
    /// The service whose exchanges (its calls, and the calls to it) are
    /// shown, by its name in the topology.
    pub service: String,
    /// How long to run; `None` is 10 s.
    pub duration: Option<Duration>,
    /// The rate and the seed.
    pub load: options::Load,
    /// The policy and faults to start in.
    pub start: options::Start,
    /// Prometheus metrics and the control API.
    pub endpoints: options::Endpoints,
    /// Each service an OS process of its own, the lines read from the
    /// nodes' taps.
    pub processes: bool,
}

/// `chaoslab tap`.
pub fn run(args: Options) -> Result<(), RunError> {
    let t = Topology::load(&args.topology)?;
    let id = crate::cli::service_named(&t, &args.service).map_err(RunError::usage)?;
    let mut initial = args.start.actions(&t).map_err(RunError::usage)?;
    initial.extend(args.load.actions().map_err(RunError::usage)?);
    let Launched {
        session,
        interrupts,
        listening,
    } = launch(
        &args.endpoints,
        Setup {
            initial,
            seed: args.load.seed.unwrap_or(1),
            until: Some(args.duration.unwrap_or(DEFAULT)),
            processes: args.processes.then(|| args.topology.clone()),
            ..Setup::new(t)
        },
    )?;
    {
        let mut err = std::io::stderr().lock();
        for line in listening {
            let _ = writeln!(err, "{line}");
        }
    }
    let name = session.topology().services[id].name.clone();
    println!("service {name} {}", session.urls()[id]);
    let mut snaps = session.snapshots();
    session.block_on(async {
        let mut shown = 0;
        while snaps.changed().await.is_ok() {
            let s = snaps.borrow_and_update().clone();
            let mut out = std::io::stdout().lock();
            let seen = shown;
            for l in s.tap.iter().filter(|l| l.seq > seen) {
                shown = l.seq;
                if l.from == id || l.to == id {
                    let _ = writeln!(out, "{:>6.1}s  {}", l.t.as_secs_f64(), l.text());
                }
            }
            let _ = out.flush();
        }
    });
    session.wait()?;
    interrupts.outcome().map_err(RunError::from)
}
