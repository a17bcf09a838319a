//! One service per process: `chaoslab node TOPOLOGY --service NAME`
//! serves one service of the topology, with the middleware, resources,
//! faults and policies it has in the whole fleet, and calls the services
//! it depends on where `--peer` and `--peers` say they run;
//! `chaoslab load TOPOLOGY` drives the open-loop load into an entry that
//! runs elsewhere.
//!
//! Both are sessions like `serve`'s, with a [`Placement`]: the topology
//! stays whole (the model, the policies, the claim rules are the whole
//! fleet's), only where each service runs changes. Everything that
//! crosses from one service to the next (the trace, the deadline, the
//! claim) is in the HTTP headers already, so a chain of nodes answers on
//! the wire as the in-process fleet does.

use std::io::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use crate::cli::{parse_fail, service_named};
use crate::endpoints::listen;
use crate::error::RunError;
use crate::fleet::Placement;
use crate::launch::{launch, Launched};
use crate::options;
use crate::report::Report;
use crate::session::Setup;
use crate::topology::Topology;

/// What `chaoslab node` is asked to serve, and where.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// The topology file.
    pub topology: PathBuf,
    /// The service this process serves, by its name in the topology;
    /// `None` with `shard`.
    pub service: Option<String>,
    /// Shard K of N of the mesh, served instead of one service.
    pub shard: Option<(usize, usize)>,
    /// Where the other shards' first listeners are: `K=URL`.
    pub shard_peer: Vec<String>,
    /// Where it listens (`8080`, `:0`, `HOST:PORT`), read when it starts.
    pub listen: String,
    /// Which replica of a replicated service this node is (0-based);
    /// `None`: one replica, which one unknown.
    pub replica: Option<u32>,
    /// Where the services it calls live.
    pub peers: options::Peers,
    /// The policy and faults to start in (faults only on this service).
    pub start: options::Start,
    /// The seed of every random choice (faults, jitter); `None` is 1.
    pub seed: Option<u64>,
    /// Prometheus metrics and the control API.
    pub endpoints: options::Endpoints,
    /// Stop when standard input closes (how `run --processes` ties each
    /// node's life to its own).
    pub exit_with_stdin: bool,
}

/// What `chaoslab load` is asked to drive, and where.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadOptions {
    /// The topology file.
    pub topology: PathBuf,
    /// Where the entry (every root) lives.
    pub peers: options::Peers,
    /// The rate and the seed.
    pub load: options::Load,
    /// How long to drive load; `None`: until SIGINT or SIGTERM.
    pub duration: Option<Duration>,
    /// The policy and faults the nodes run: only the model's figures
    /// read them.
    pub start: options::Start,
    /// Prometheus metrics (the root requests) and the control API.
    pub endpoints: options::Endpoints,
}

/// `chaoslab node`: serves one service until SIGINT or SIGTERM, then
/// prints the rows of what it measured (itself and its callees).
pub fn serve(args: Options) -> Result<(), RunError> {
    let t = Topology::load(&args.topology)?;
    let service = match (&args.service, args.shard) {
        (_, Some(shard)) => return serve_shard(args, t, shard),
        (Some(s), None) => s.clone(),
        (None, None) => return Err(RunError::Usage("give --service NAME or --shard K/N".into())),
    };
    // A service with endpoints is served whole: its first node stands
    // for it.
    let id = service_named(&t, &service).map_err(RunError::usage)?;
    let id = t.services[id].group;
    let replicas = t.services[id].replicas;
    if let Some(r) = args.replica.filter(|&r| r >= replicas) {
        return Err(RunError::Usage(format!(
            "--replica {r}: `{}` has {replicas} replica{} (numbered 0 to {})",
            service,
            if replicas == 1 { "" } else { "s" },
            replicas - 1
        )));
    }
    let listen = listen::parse_addr("--listen", &args.listen)?;
    let peers = args
        .peers
        .read(&t)
        .and_then(|p| p.callees_of(&t, id))
        .map_err(RunError::usage)?;
    for f in &args.start.fail {
        let (target, _) = parse_fail(&t, f).map_err(RunError::usage)?;
        if t.services[target].group != id {
            return Err(RunError::Usage(format!(
                "--fail {f}: this node serves `{}`; give --fail to the node of `{}`",
                service, t.services[target].name
            )));
        }
    }
    let initial = args.start.actions(&t).map_err(RunError::usage)?;
    let Launched {
        session,
        interrupts,
        listening,
    } = launch(
        &args.endpoints,
        Setup {
            initial,
            seed: args.seed.unwrap_or(1),
            load: false,
            placement: Some(Placement {
                local: Some(id),
                listen,
                replica: args.replica,
                peers,
                shard: None,
            }),
            ..Setup::new(t)
        },
    )?;
    if args.exit_with_stdin {
        exit_with_stdin(&session);
    }
    let t = session.topology();
    let name = t.services[id].service_name().to_string();
    {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "service {name} {}", session.urls()[id]);
        for line in &listening {
            let _ = writeln!(out, "{line}");
        }
        let _ = writeln!(out, "serving {name} of {} until Ctrl-C or SIGTERM", t.name);
        let _ = out.flush();
    }
    // The rows this node measured: its own (every endpoint's), and its
    // callees' as it saw them.
    let mut shown: Vec<String> = vec![name.clone()];
    for node in t.group(id) {
        for name in
            std::iter::once(node).chain(t.services[node].calls.iter().map(|&e| t.edges[e].to))
        {
            let name = &t.services[name].name;
            if !shown.contains(name) {
                shown.push(name.clone());
            }
        }
    }
    let record = session.wait()?;
    let report = Report::measure(&record, Duration::ZERO, Duration::MAX);
    let shown: Vec<&str> = shown.iter().map(String::as_str).collect();
    print!("{}", report.rows_of(&shown));
    interrupts.outcome().map_err(RunError::from)
}

/// Stops `session` when standard input closes: the parent closed the
/// pipe, exited or was killed.
fn exit_with_stdin(session: &crate::session::Session) {
    let stop = session.stopper();
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut std::io::stdin().lock(), &mut std::io::sink());
        let _ = stop.send(true);
    });
}

/// The other shards' first listeners, `bases[k]`: `--shard-peer K=URL`
/// for each given, the `--peers` template with `{shard}` for the rest,
/// this shard's own at `listen`.
fn shard_bases(
    args: &Options,
    (k, n): (usize, usize),
    listen: std::net::SocketAddr,
) -> Result<Vec<Option<String>>, String> {
    if !args.peers.peer.is_empty() {
        return Err("--peer: a shard finds the other shards' services by --shard-peer K=URL or a --peers template with {shard}".into());
    }
    let template = args.peers.peers.as_deref();
    if let Some(t) = template.filter(|t| !t.contains("{shard}")) {
        return Err(format!(
            "--peers {t}: a shard's template holds {{shard}} (`http://chaoslab-shard-{{shard}}:10000/`)"
        ));
    }
    let mut bases: Vec<Option<String>> = (0..n)
        .map(|j| template.map(|t| t.replace("{shard}", &j.to_string())))
        .collect();
    for spec in &args.shard_peer {
        let (j, url) = spec.split_once('=').ok_or_else(|| {
            format!("--shard-peer {spec}: give K=URL (`2=http://10.0.0.7:10000/`)")
        })?;
        let j: usize = j
            .trim()
            .parse()
            .ok()
            .filter(|&j| j < n)
            .ok_or_else(|| format!("--shard-peer {spec}: K is a shard from 0 to {}", n - 1))?;
        bases[j] = Some(url.trim().to_string());
    }
    bases[k] = Some(format!("http://{listen}/"));
    for (j, b) in bases.iter().enumerate() {
        match b {
            None => {
                return Err(format!(
                    "shard {j}: where it runs is not given: --shard-peer {j}=URL, or --peers with {{shard}}"
                ))
            }
            Some(u) => crate::topology::spec::check_http_url(u)
                .and_then(|_| {
                    crate::session::shards::peers_base_ok(u)
                        .then_some(())
                        .ok_or_else(|| "give http://HOST:PORT/, its first listener".to_string())
                })
                .map_err(|e| format!("shard {j} at {u}: {e}"))?,
        }
    }
    Ok(bases)
}

/// `chaoslab node --shard K/N`: serves shard K's services until SIGINT or
/// SIGTERM, then prints the rows of what it measured (its services).
fn serve_shard(args: Options, t: Topology, (k, n): (usize, usize)) -> Result<(), RunError> {
    if args.replica.is_some() {
        return Err(RunError::Usage(
            "--replica: a shard serves every replica of its services".into(),
        ));
    }
    let listen = listen::parse_addr("--listen", &args.listen)?;
    let bases = shard_bases(&args, (k, n), listen).map_err(RunError::Usage)?;
    let plan = crate::session::shards::plan(&t, (k, n), listen, &bases).map_err(RunError::Usage)?;
    for f in &args.start.fail {
        let (target, _) = parse_fail(&t, f).map_err(RunError::usage)?;
        if !plan.placement.serves(target) {
            return Err(RunError::Usage(format!(
                "--fail {f}: `{}` is not on shard {k}; give --fail to the shard that serves it",
                t.services[target].name
            )));
        }
    }
    let initial = args.start.actions(&t).map_err(RunError::usage)?;
    let services = plan.services.clone();
    let Launched {
        session,
        interrupts,
        listening,
    } = launch(
        &args.endpoints,
        Setup {
            initial,
            seed: args.seed.unwrap_or(1),
            load: false,
            placement: Some(plan.placement),
            ..Setup::new(t)
        },
    )?;
    if args.exit_with_stdin {
        exit_with_stdin(&session);
    }
    let t = session.topology();
    {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(
            out,
            "shard {k}/{n}: {} services on {} ports from {listen}",
            services.len(),
            plan.listeners
        );
        for line in &listening {
            let _ = writeln!(out, "{line}");
        }
        let _ = writeln!(
            out,
            "serving shard {k}/{n} of {} until Ctrl-C or SIGTERM",
            t.name
        );
        let _ = out.flush();
    }
    let shown: Vec<String> = services
        .iter()
        .flat_map(|&g| t.group(g))
        .map(|j| t.services[j].name.clone())
        .collect();
    let record = session.wait()?;
    let report = Report::measure(&record, Duration::ZERO, Duration::MAX);
    let shown: Vec<&str> = shown.iter().map(String::as_str).collect();
    print!("{}", report.rows_of(&shown));
    interrupts.outcome().map_err(RunError::from)
}

/// `chaoslab load`: root requests into the entry where the peers say it
/// runs, for `--duration` or until a signal; then the table's entry line.
pub fn load(args: LoadOptions) -> Result<(), RunError> {
    let t = Topology::load(&args.topology)?;
    let peers = args.peers.read(&t).map_err(RunError::usage)?;
    // Every root, where the peers say it runs.
    let placed = peers.roots(&t).map_err(RunError::usage)?;
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
            until: args.duration,
            placement: Some(Placement {
                local: None,
                listen: std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
                replica: None,
                peers: placed,
                shard: None,
            }),
            ..Setup::new(t)
        },
    )?;
    {
        let mut err = std::io::stderr().lock();
        for line in listening {
            let _ = writeln!(err, "{line}");
        }
        let _ = writeln!(
            err,
            "load into {} at {}{}",
            session.topology().entry().name,
            session.entry_url(),
            match args.duration {
                Some(d) => format!(" for {d:?}"),
                None => " until Ctrl-C or SIGTERM".into(),
            }
        );
    }
    let mut snaps = session.snapshots();
    session.block_on(async {
        let mut next = Duration::from_secs(1);
        while snaps.changed().await.is_ok() {
            let s = snaps.borrow_and_update().clone();
            if s.t >= next {
                // One line a second, even after a late tick.
                next = Duration::from_secs(s.t.as_secs() + 1);
                let _ = writeln!(
                    std::io::stderr().lock(),
                    "[{:>5.1}s] {} of {} rps, avail {:.1}%{}",
                    s.t.as_secs_f64(),
                    s.root.rps.round(),
                    s.state.rps.round(),
                    s.root.availability * 100.0,
                    if s.saturation.is_empty() {
                        String::new()
                    } else {
                        format!(" · SATURATED: {}", s.saturation.join("; "))
                    }
                );
            }
        }
    });
    let record = session.wait()?;
    let mut report = Report::measure(&record, Duration::ZERO, Duration::MAX);
    if interrupts.interrupted() {
        report.mark_interrupted();
    }
    print!("{}", report.entry_lines());
    interrupts.outcome().map_err(RunError::from)
}
