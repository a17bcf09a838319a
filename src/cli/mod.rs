//! The command line (SPEC section 4).

mod endpoint_args;
mod generate;
mod import;
mod options;
pub use options::ImportJob;
mod peers;
mod pictures;
mod population;
pub mod reference;
mod sweep;
mod values;

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

pub use endpoint_args::EndpointArgs;
pub use generate::{GenerateArgs, Like};
pub use import::{ImportArgs, ImportFormat};
pub use peers::{names as service_names, read_peers, read_remote, PeerArgs, Peers};
pub use pictures::{ComparePictures, Pictures};
pub use population::{closed_loop_in_one_process, Population};
pub use sweep::SweepArgs;
pub use values::*;

use crate::theme::Theme;

/// A terminal lab for retry storms: real services, real numbers.
#[derive(Debug, Parser)]
#[command(
    name = "chaoslab",
    version,
    about,
    args_conflicts_with_subcommands = true
)]
pub struct Opts {
    /// What to do.
    #[command(subcommand)]
    pub command: Option<Command>,
    /// `chaoslab TOPOLOGY` is `chaoslab run TOPOLOGY`.
    #[command(flatten)]
    pub run: RunArgs,
}

impl Opts {
    /// The command to run, with the bare `chaoslab TOPOLOGY` form folded in.
    pub fn into_command(self) -> Command {
        match self.command {
            Some(c) => c,
            None => Command::Run(self.run),
        }
    }
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Start the fleet and drive load: the live dashboard, or `--headless`.
    Run(RunArgs),
    /// Run the same fault under several policies and print the table.
    Compare(CompareArgs),
    /// Run a scenario over a grid of values (load, trigger, budget) under
    /// each policy and draw where the fleet recovers.
    Sweep(SweepArgs),
    /// Print the analytical model's table; starts nothing.
    Model(ModelArgs),
    /// Validate a topology and print its graph.
    Check(CheckArgs),
    /// The storm map: for every service failing, the load it then
    /// receives, the path that multiplies it and the lines that set its
    /// retries; exit 1 over a threshold. Starts nothing.
    Lint(LintArgs),
    /// Start the fleet with no internal load; outside clients drive it.
    Serve(ServeArgs),
    /// Serve one service of the topology in this process; its
    /// dependencies run elsewhere (`--peer`, `--peers`).
    Node(NodeArgs),
    /// Drive open-loop load into an entry that runs elsewhere.
    Load(LoadArgs),
    /// Write Kubernetes manifests for a topology; starts nothing.
    K8s(K8sArgs),
    /// Write a topology from the call graph a tracing system or a mesh
    /// exports (Jaeger, Zipkin, the servicegraph connector, Kiali), or
    /// write a mesh's retry configuration (Istio, Envoy, Linkerd, Gateway
    /// API, gRPC, nginx, HAProxy) onto one.
    Import(ImportArgs),
    /// Write a synthetic mesh drawn from published statistics of
    /// production call graphs (Meta's, Alibaba's).
    Generate(GenerateArgs),
    /// Run the fleet with load and print one service's exchanges as the
    /// wire carries them: status, claim header, what the caller did.
    Tap(TapArgs),
    /// A guided tour of the post, one chapter per figure, live.
    Tour(TourArgs),
}

/// `chaoslab run`.
#[derive(Debug, Args, Default, Clone)]
pub struct RunArgs {
    /// The topology file.
    #[arg(value_name = "TOPOLOGY")]
    pub topology: Option<PathBuf>,
    /// Run without the dashboard: progress on stderr, a table on stdout.
    #[arg(long)]
    pub headless: bool,
    /// How long to run and how much of it to leave out.
    #[command(flatten)]
    pub clock: Clock,
    /// The rate and the seed.
    #[command(flatten)]
    pub load: Load,
    /// The policy and faults to start in.
    #[command(flatten)]
    pub start: Start,
    /// Attribution mode: simple, declared, learned (overrides the topology).
    #[arg(long, value_parser = parse_attribution)]
    pub attribution: Option<error_ownership::Attribution>,
    /// Turn the at-least-once rule (rule 5) on or off.
    #[arg(long, value_name = "on|off", value_parser = parse_on_off)]
    pub at_least_once: Option<bool>,
    /// A scenario file (timeline and expectations).
    #[arg(long)]
    pub scenario: Option<PathBuf>,
    /// Write the JSON report here.
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// Write a JUnit XML report here.
    #[arg(long)]
    pub junit: Option<PathBuf>,
    /// `--html` and `--series`.
    #[command(flatten)]
    pub pictures: Pictures,
    /// Dashboard frames per second.
    #[arg(long, default_value_t = 10, value_parser = parse_fps, allow_hyphen_values = true)]
    pub fps: u32,
    /// No colours (NO_COLOR is honoured too; either wins over --theme).
    #[arg(long)]
    pub no_color: bool,
    /// The dashboard for a projector: fewer columns, each service a box
    /// with its amplification in big glyphs.
    #[arg(long)]
    pub big: bool,
    /// The dashboard's colours: dark (the terminal's own 16 colours) or
    /// light (dark shades on a light page, for light-background projectors).
    #[arg(long, value_name = "dark|light", default_value = "dark", value_parser = parse_theme)]
    pub theme: Theme,
    /// Save the run's actions (keys, control API, timeline) as a scenario
    /// file when it ends.
    #[arg(long)]
    pub record: Option<PathBuf>,
    /// List every service in the headless table and progress line (by
    /// default a fleet of more than 20 services shows its roots and the
    /// services with the highest amplification).
    #[arg(long)]
    pub all: bool,
    /// Record the dashboard as an asciicast v2 file (`asciinema play
    /// FILE`): every frame, with its time.
    #[arg(long, value_name = "FILE")]
    pub cast: Option<PathBuf>,
    /// Prometheus metrics and the control API.
    #[command(flatten)]
    pub endpoints: EndpointArgs,
    /// Run each service in an OS process of its own (`chaoslab node` on
    /// loopback), read and driven over HTTP; every node stops when the
    /// run does.
    #[arg(long)]
    pub processes: bool,
    /// Spread the mesh over N shard processes (`chaoslab node --shard
    /// K/N` on loopback), each serving its share of the services, calling
    /// across shards over HTTP/2 (`check --shards N` prints the
    /// placement); every shard stops when the run does.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1024), conflicts_with = "processes")]
    pub shards: Option<u16>,
    /// Run over nodes already running elsewhere (`chaoslab node`, a
    /// cluster): where each node's control API answers, `NAME=URL` (repeat
    /// it) or a template with `{name}`. The load goes to the entry where
    /// `--peer`/`--peers` say it runs.
    #[arg(long, value_name = "NAME=URL|TEMPLATE")]
    pub remote: Vec<String>,
    /// Where the entry runs, for `--remote`.
    #[command(flatten)]
    pub peers: PeerArgs,
}

/// A flag that does not make sense, in words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// What `compare` and `sweep` share: the policies that run in turn on
/// the same fleet, and what every one of their runs keeps the same.
#[derive(Debug, Args, Clone)]
pub struct Contenders {
    /// The service(s) to fail in every run: `D` or `D=0.3`.
    #[arg(long = "fail", value_name = "SERVICE[=RATE]")]
    pub fail: Vec<String>,
    /// Policies to compare, comma-separated, or `all` for every preset and
    /// defence (`+deadline` propagates deadlines, `+breaker` puts a breaker
    /// on every call, `+gradient`, `+vegas` or `+aimd` an adaptive
    /// concurrency limit on every service: `retry+gradient`; `+backoff`
    /// backs off before each retry, `+closed` drives a closed loop of
    /// clients: `retry+backoff+closed`; `+hedge` hedges every call).
    #[arg(long, default_value = "retry,budget,ownership")]
    pub policies: String,
    /// What `+closed` and `+backoff` mean.
    #[command(flatten)]
    pub population: Population,
    /// How long each run lasts and how much of it to leave out.
    #[command(flatten)]
    pub clock: Clock,
    /// The rate and the seed.
    #[command(flatten)]
    pub load: Load,
}

/// `chaoslab compare`.
#[derive(Debug, Args, Clone)]
pub struct CompareArgs {
    /// The topology file.
    pub topology: PathBuf,
    /// The policies, and what each of their runs shares.
    #[command(flatten)]
    pub runs: Contenders,
    /// Show the model's prediction under each measured figure.
    #[arg(long)]
    pub model: bool,
    /// Play this scenario's steps in every run and say how each policy
    /// came through its trigger.
    #[arg(long)]
    pub scenario: Option<PathBuf>,
    /// Write the comparison as JSON here.
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// `--html`.
    #[command(flatten)]
    pub pictures: ComparePictures,
    /// Serve Prometheus metrics of the policy running now on this address
    /// (as `run --metrics`; the counters start again with each policy,
    /// labelled `policy`).
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<String>,
    /// Each service an OS process of its own, as `run --processes`
    /// (fresh nodes for each policy).
    #[arg(long)]
    pub processes: bool,
    /// The mesh over N shard processes, as `run --shards N` (fresh shards
    /// for each policy).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1024), conflicts_with = "processes")]
    pub shards: Option<u16>,
}

/// `chaoslab model`.
#[derive(Debug, Args, Clone)]
pub struct ModelArgs {
    /// The topology file.
    pub topology: PathBuf,
    /// The policy and faults to model.
    #[command(flatten)]
    pub start: Start,
}

/// How `chaoslab lint` writes its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LintFormat {
    /// A table for people.
    Text,
    /// One JSON document.
    Json,
    /// SARIF 2.1.0, for code scanning on a pull request.
    Sarif,
    /// JUnit XML, one test case per service.
    Junit,
}

/// `chaoslab lint`.
#[derive(Debug, Args, Clone)]
pub struct LintArgs {
    /// The topology file (e.g. one `chaoslab import istio ... --onto` wrote).
    pub topology: PathBuf,
    /// Exit 1 when a failing service receives more than X times its
    /// baseline.
    #[arg(long, value_name = "X", value_parser = parse_max_amplification)]
    pub max_amplification: Option<f64>,
    /// Exit 1 when more than N hops retry above a failing service.
    #[arg(long, value_name = "N")]
    pub max_radius: Option<usize>,
    /// The share of requests each service fails in turn (default 1:
    /// every request).
    #[arg(long, value_name = "R", default_value = "1", value_parser = crate::lint::parse_rate)]
    pub rate: f64,
    /// How to write the answer.
    #[arg(long, value_enum, default_value = "text")]
    pub format: LintFormat,
    /// Write it here (default: standard output).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
}

fn parse_max_amplification(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .trim_end_matches(['x', '×'])
        .parse()
        .map_err(|_| format!("a factor of 1 or more (e.g. 4), got {s:?}"))?;
    if !(v.is_finite() && v >= 1.0) {
        return Err(format!(
            "a factor of 1 or more (a failing service always gets its own load), got {s}"
        ));
    }
    Ok(v)
}

impl From<LintArgs> for crate::lint::Options {
    fn from(a: LintArgs) -> Self {
        crate::lint::Options {
            topology: a.topology,
            max_amplification: a.max_amplification,
            max_radius: a.max_radius,
            rate: a.rate,
            format: match a.format {
                LintFormat::Text => crate::lint::Format::Text,
                LintFormat::Json => crate::lint::Format::Json,
                LintFormat::Sarif => crate::lint::Format::Sarif,
                LintFormat::Junit => crate::lint::Format::Junit,
            },
            output: a.output,
        }
    }
}

/// `chaoslab check`.
#[derive(Debug, Args, Clone)]
pub struct CheckArgs {
    /// The topology file.
    pub topology: PathBuf,
    /// With many roots, also find each root's static radius by a
    /// simulation of the rules on the subgraph it reaches (seconds on a
    /// mesh of thousands), beside the model's search.
    #[arg(long)]
    pub simulate: bool,
    /// Also print where each service would run over N shards (SPEC
    /// section 19): callers beside their callees, balanced by expected
    /// load, and the share of the call traffic that crosses shards.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub shards: Option<u16>,
}

/// `chaoslab serve`.
#[derive(Debug, Args, Clone)]
pub struct ServeArgs {
    /// The topology file.
    pub topology: PathBuf,
    /// Stop after this long and print the per-service table.
    #[arg(long, value_parser = parse_run_duration, allow_hyphen_values = true)]
    pub duration: Option<Duration>,
    /// Print the table at the end (with --duration).
    #[arg(long)]
    pub headless: bool,
    /// The policy and faults to start in.
    #[command(flatten)]
    pub start: Start,
    /// Seed for every random choice (faults, jitter).
    #[arg(long, value_parser = parse_seed, allow_hyphen_values = true)]
    pub seed: Option<u64>,
    /// Write the JSON report here at the end.
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// Prometheus metrics and the control API.
    #[command(flatten)]
    pub endpoints: EndpointArgs,
    /// Spread the mesh over N shard processes, as `run --shards N`: the
    /// entry and every service served by the shards.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub shards: Option<u16>,
}

/// `chaoslab node`.
#[derive(Debug, Args, Clone)]
pub struct NodeArgs {
    /// The topology file.
    pub topology: PathBuf,
    /// The service this process serves.
    #[arg(
        long,
        value_name = "NAME",
        required_unless_present = "shard",
        conflicts_with = "shard"
    )]
    pub service: Option<String>,
    /// Serve shard K of N of the mesh instead (SPEC section 19): the
    /// services `check --shards N` places on it, every replica of each,
    /// on consecutive ports from `--listen`'s.
    #[arg(long, value_name = "K/N", value_parser = values::parse_shard)]
    pub shard: Option<(u16, u16)>,
    /// Where another shard's first listener is: `K=URL`
    /// (`2=http://10.0.0.7:10000/`); repeat it for each. A `--peers`
    /// template with `{shard}` gives the rest.
    #[arg(long = "shard-peer", value_name = "K=URL", requires = "shard")]
    pub shard_peer: Vec<String>,
    /// Where the service listens (`8080`, `:0` for a free port,
    /// `HOST:PORT`; 127.0.0.1 unless it says otherwise); a shard's first
    /// listener, the others on the ports after it.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:0")]
    pub listen: String,
    /// Which replica of a replicated service this node is (0-based): a
    /// fault naming replicas reaches it as it names it. Without it, the
    /// node is one replica, which one unknown (a pod of a Deployment).
    #[arg(long, value_name = "N")]
    pub replica: Option<u32>,
    /// Where the services it calls live.
    #[command(flatten)]
    pub peers: PeerArgs,
    /// The policy and faults to start in (`--fail` only for the service
    /// served here).
    #[command(flatten)]
    pub start: Start,
    /// Seed for every random choice (faults, jitter).
    #[arg(long, value_parser = parse_seed, allow_hyphen_values = true)]
    pub seed: Option<u64>,
    /// Prometheus metrics and the control API.
    #[command(flatten)]
    pub endpoints: EndpointArgs,
    /// Stop when standard input closes: how `run --processes` ties each
    /// node's life to its own, even when it is killed outright.
    #[arg(long, hide = true)]
    pub exit_with_stdin: bool,
}

/// `chaoslab load`.
#[derive(Debug, Args, Clone)]
pub struct LoadArgs {
    /// The topology file.
    pub topology: PathBuf,
    /// Where the entry lives.
    #[command(flatten)]
    pub peers: PeerArgs,
    /// The rate and the seed.
    #[command(flatten)]
    pub load: Load,
    /// How long to drive load (default: until SIGINT or SIGTERM).
    #[arg(long, value_parser = parse_run_duration, allow_hyphen_values = true)]
    pub duration: Option<Duration>,
    /// The policy and faults the nodes run: only the model's figures
    /// read them (the nodes are told by their own flags).
    #[command(flatten)]
    pub start: Start,
    /// Prometheus metrics (the root requests) and the control API.
    #[command(flatten)]
    pub endpoints: EndpointArgs,
}

/// `chaoslab tour`.
#[derive(Debug, Args, Clone)]
pub struct TourArgs {
    /// Start at this chapter (1 to 8), or play a range of them (`2-5`).
    #[arg(value_parser = parse_chapter, allow_hyphen_values = true)]
    pub chapter: Option<(usize, Option<usize>)>,
    /// List the chapters.
    #[arg(long)]
    pub list: bool,
    /// Run every chapter without the dashboard and print each one's text,
    /// captions and measured figures.
    #[arg(long)]
    pub headless: bool,
    /// Write the chapters' topologies and scenarios into this folder.
    #[arg(long, value_name = "DIR")]
    pub export: Option<PathBuf>,
    /// Dashboard frames per second.
    #[arg(long, default_value_t = 10, value_parser = parse_fps, allow_hyphen_values = true)]
    pub fps: u32,
    /// No colours (NO_COLOR is honoured too).
    #[arg(long)]
    pub no_color: bool,
    /// The layout for a projector (as `run --big`).
    #[arg(long)]
    pub big: bool,
    /// Colours for a dark or a light background (as `run --theme`).
    #[arg(long, value_parser = parse_theme, default_value = "dark")]
    pub theme: Theme,
    /// Record the chapters played, one after the other, as one asciicast
    /// v2 file (as `run --cast`).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["list", "export", "headless"])]
    pub cast: Option<PathBuf>,
    /// Spread the mesh over N shard processes, as `run --shards N` (fresh shards for
    /// each chapter).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub shards: Option<u16>,
}

/// `chaoslab tap`.
#[derive(Debug, Args, Clone)]
pub struct TapArgs {
    /// The topology file.
    pub topology: PathBuf,
    /// The service whose exchanges (its calls, and the calls to it) are
    /// shown.
    #[arg(long, value_name = "NAME")]
    pub service: String,
    /// How long to run (default 10s).
    #[arg(long, value_parser = parse_run_duration, allow_hyphen_values = true)]
    pub duration: Option<Duration>,
    /// The rate and the seed.
    #[command(flatten)]
    pub load: Load,
    /// The policy and faults to start in.
    #[command(flatten)]
    pub start: Start,
    /// Prometheus metrics and the control API (to drive it meanwhile).
    #[command(flatten)]
    pub endpoints: EndpointArgs,
    /// Each service an OS process of its own, as `run --processes`:
    /// the lines are read from the nodes' taps.
    #[arg(long)]
    pub processes: bool,
}

/// `chaoslab k8s`.
#[derive(Debug, Args, Clone)]
pub struct K8sArgs {
    /// The topology file.
    pub topology: PathBuf,
    /// Write one file per object (per service: its Deployment and
    /// Service) and a kustomization.yaml into this directory, instead of
    /// one multi-document YAML on stdout.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Put every object in this namespace (and write the Namespace);
    /// without it, kubectl's current namespace.
    #[arg(long, value_name = "NS")]
    pub namespace: Option<String>,
    /// The container image every pod runs.
    #[arg(long, default_value = "chaoslab:dev")]
    pub image: String,
    /// Pods of one service (default 1 each): `B=3`.
    #[arg(long = "replicas", value_name = "NAME=N")]
    pub replicas: Vec<String>,
    /// Root requests per second of the load Job (default: `load.rps`).
    #[arg(long, value_parser = parse_rps, allow_hyphen_values = true)]
    pub rps: Option<f64>,
    /// How long the load Job drives the entry.
    #[arg(long, value_parser = parse_run_duration, allow_hyphen_values = true, default_value = "60s")]
    pub duration: Duration,
    /// Put the token in this file in the Secret every node's control API
    /// asks for (default: a fresh random one each time).
    #[arg(long, value_name = "FILE")]
    pub control_token_file: Option<PathBuf>,
    /// One Deployment per shard of N (its pod runs `chaoslab node --shard
    /// K/N`, as `check --shards N` places them) instead of one per
    /// service, each behind a headless Service.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1024), conflicts_with = "replicas")]
    pub shards: Option<u16>,
}

/// How long a run lasts, and the leading part its report leaves out.
#[derive(Debug, Args, Default, Clone)]
pub struct Clock {
    /// How long to run after the warm-up (e.g. 20s, 1m).
    #[arg(long, value_parser = parse_run_duration, allow_hyphen_values = true)]
    pub duration: Option<Duration>,
    /// Leading time not counted in the report.
    #[arg(long, value_parser = parse_duration, allow_hyphen_values = true)]
    pub warmup: Option<Duration>,
}

/// The load into the entry.
#[derive(Debug, Args, Default, Clone)]
pub struct Load {
    /// Root requests per second into the entry (overrides `load.rps`).
    #[arg(long, value_parser = parse_rps, allow_hyphen_values = true)]
    pub rps: Option<f64>,
    /// Seed for every random choice (faults, arrivals, jitter).
    #[arg(long, value_parser = parse_seed, allow_hyphen_values = true)]
    pub seed: Option<u64>,
}

/// The policy and the faults a run (or the model) starts in: actions at
/// time zero.
#[derive(Debug, Args, Default, Clone)]
pub struct Start {
    /// Policy preset: none, retry, budget, ownership, finagle, envoy, grpc,
    /// aws, aws-2026, sre.
    #[arg(long)]
    pub policy: Option<String>,
    /// Make a service fail: `D` (every request) or `D=0.3`.
    #[arg(long = "fail", value_name = "SERVICE[=RATE]")]
    pub fail: Vec<String>,
}

#[cfg(test)]
mod tests;
