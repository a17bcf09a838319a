//! The one place the command line becomes the front ends' options: each
//! clap struct turned into the plain struct its front end takes, so no
//! front end knows clap and each can be called (from a test, a bench,
//! another front end) with exactly what it needs.

use super::{
    CheckArgs, Clock, CompareArgs, Contenders, EndpointArgs, GenerateArgs, ImportArgs,
    ImportFormat, K8sArgs, Like, Load, LoadArgs, ModelArgs, NodeArgs, PeerArgs, Pictures,
    Population, RunArgs, ServeArgs, Start, SweepArgs, TapArgs, TourArgs, UsageError,
};
use crate::{compare, generate, import, inspect, k8s, node, options, serve, tap, tour};

impl From<Clock> for options::Clock {
    fn from(a: Clock) -> Self {
        options::Clock {
            duration: a.duration,
            warmup: a.warmup,
        }
    }
}

impl From<Population> for options::Population {
    fn from(a: Population) -> Self {
        options::Population {
            clients: a.clients,
            backoff: a.backoff,
        }
    }
}

impl From<Contenders> for options::Contenders {
    fn from(a: Contenders) -> Self {
        options::Contenders {
            fail: a.fail,
            policies: a.policies,
            population: a.population.into(),
            clock: a.clock.into(),
            load: a.load.into(),
        }
    }
}

impl From<CompareArgs> for compare::Options {
    fn from(a: CompareArgs) -> Self {
        compare::Options {
            topology: a.topology,
            runs: a.runs.into(),
            model: a.model,
            scenario: a.scenario,
            report: a.report,
            html: a.pictures.html,
            metrics: a.metrics,
            processes: a.processes,
            shards: a.shards.map(usize::from),
        }
    }
}

impl From<SweepArgs> for compare::sweep::Options {
    fn from(a: SweepArgs) -> Self {
        compare::sweep::Options {
            topology: a.topology,
            scenario: a.scenario,
            vary: a.vary,
            runs: a.runs.into(),
            csv: a.csv,
            report: a.report,
            html: a.html,
            yes: a.yes,
            shards: a.shards.map(usize::from),
        }
    }
}

impl RunArgs {
    /// The run these flags ask for: a topology is given.
    pub fn options(self) -> Result<options::Run, UsageError> {
        let topology = self.topology.ok_or_else(|| {
            UsageError(
                "no topology given: try `chaoslab topologies/uber-chain.yaml` (see --help)".into(),
            )
        })?;
        Ok(options::Run {
            topology,
            duration: self.clock.duration,
            warmup: self.clock.warmup,
            load: self.load.into(),
            start: self.start.into(),
            attribution: self.attribution,
            at_least_once: self.at_least_once,
            scenario: self.scenario,
            report: self.report,
            junit: self.junit,
            pictures: self.pictures.into(),
            fps: self.fps,
            no_color: self.no_color,
            big: self.big,
            theme: self.theme,
            record: self.record,
            all: self.all,
            cast: self.cast,
            endpoints: self.endpoints.into(),
            processes: self.processes,
            shards: self.shards.map(usize::from),
            remote: self.remote,
            peers: self.peers.into(),
        })
    }
}

impl From<Pictures> for options::Pictures {
    fn from(a: Pictures) -> Self {
        options::Pictures {
            html: a.html,
            series: a.series,
        }
    }
}

impl From<TourArgs> for tour::Options {
    fn from(a: TourArgs) -> Self {
        tour::Options {
            chapter: a.chapter,
            list: a.list,
            headless: a.headless,
            export: a.export,
            fps: a.fps,
            no_color: a.no_color,
            big: a.big,
            theme: a.theme,
            cast: a.cast,
            shards: a.shards.map(usize::from),
        }
    }
}

impl From<Start> for options::Start {
    fn from(a: Start) -> Self {
        options::Start {
            policy: a.policy,
            fail: a.fail,
        }
    }
}

impl From<Load> for options::Load {
    fn from(a: Load) -> Self {
        options::Load {
            rps: a.rps,
            seed: a.seed,
        }
    }
}

impl From<EndpointArgs> for options::Endpoints {
    fn from(a: EndpointArgs) -> Self {
        options::Endpoints {
            metrics: a.metrics,
            control: a.control,
            control_hosts: a.control_hosts,
            control_token_file: a.control_token_file,
            control_insecure: a.control_insecure,
        }
    }
}

impl From<PeerArgs> for options::Peers {
    fn from(a: PeerArgs) -> Self {
        options::Peers {
            peer: a.peer,
            peers: a.peers,
        }
    }
}

impl From<CheckArgs> for inspect::CheckOptions {
    fn from(a: CheckArgs) -> Self {
        inspect::CheckOptions {
            topology: a.topology,
            simulate: a.simulate,
            shards: a.shards.map(usize::from),
        }
    }
}

impl From<ModelArgs> for inspect::ModelOptions {
    fn from(a: ModelArgs) -> Self {
        inspect::ModelOptions {
            topology: a.topology,
            start: a.start.into(),
        }
    }
}

impl From<ServeArgs> for serve::Options {
    fn from(a: ServeArgs) -> Self {
        serve::Options {
            topology: a.topology,
            duration: a.duration,
            headless: a.headless,
            start: a.start.into(),
            seed: a.seed,
            report: a.report,
            endpoints: a.endpoints.into(),
            shards: a.shards.map(usize::from),
        }
    }
}

impl From<TapArgs> for tap::Options {
    fn from(a: TapArgs) -> Self {
        tap::Options {
            topology: a.topology,
            service: a.service,
            duration: a.duration,
            load: a.load.into(),
            start: a.start.into(),
            endpoints: a.endpoints.into(),
            processes: a.processes,
        }
    }
}

impl From<NodeArgs> for node::Options {
    fn from(a: NodeArgs) -> Self {
        node::Options {
            topology: a.topology,
            service: a.service,
            shard: a.shard.map(|(k, n)| (usize::from(k), usize::from(n))),
            shard_peer: a.shard_peer,
            listen: a.listen,
            replica: a.replica,
            peers: a.peers.into(),
            start: a.start.into(),
            seed: a.seed,
            endpoints: a.endpoints.into(),
            exit_with_stdin: a.exit_with_stdin,
        }
    }
}

impl From<LoadArgs> for node::LoadOptions {
    fn from(a: LoadArgs) -> Self {
        node::LoadOptions {
            topology: a.topology,
            peers: a.peers.into(),
            load: a.load.into(),
            duration: a.duration,
            start: a.start.into(),
            endpoints: a.endpoints.into(),
        }
    }
}

impl From<K8sArgs> for k8s::Request {
    fn from(a: K8sArgs) -> Self {
        k8s::Request {
            topology: a.topology,
            out: a.out,
            namespace: a.namespace,
            image: a.image,
            replicas: a.replicas,
            rps: a.rps,
            duration: a.duration,
            control_token_file: a.control_token_file,
            shards: a.shards.map(usize::from),
        }
    }
}

impl From<Like> for generate::Like {
    fn from(l: Like) -> Self {
        match l {
            Like::Meta => generate::Like::Meta,
            Like::Alibaba => generate::Like::Alibaba,
            Like::UberIncident => generate::Like::UberIncident,
        }
    }
}

impl From<GenerateArgs> for generate::Options {
    fn from(a: GenerateArgs) -> Self {
        generate::Options {
            services: a.services,
            like: a.like.into(),
            seed: a.seed,
            rps: a.rps,
            output: a.output,
        }
    }
}

/// What `chaoslab import` runs: a call graph from a tracing system or a
/// mesh, or a mesh's retry configuration onto a graph.
#[derive(Debug, Clone, PartialEq)]
pub enum ImportJob {
    /// A call graph (SPEC section 12).
    Graph(import::Options),
    /// A configuration onto a graph (SPEC section 18).
    Config(import::config::Options),
}

impl ImportFormat {
    /// The graph format it names, or the configuration format.
    fn kind(self) -> Result<import::Format, import::config::ConfigFormat> {
        use import::config::ConfigFormat as C;
        match self {
            ImportFormat::Jaeger => Ok(import::Format::Jaeger),
            ImportFormat::Zipkin => Ok(import::Format::Zipkin),
            ImportFormat::Servicegraph => Ok(import::Format::Servicegraph),
            ImportFormat::Kiali => Ok(import::Format::Kiali),
            ImportFormat::JaegerTrace => Ok(import::Format::JaegerTrace),
            ImportFormat::Istio => Err(C::Istio),
            ImportFormat::Envoy => Err(C::Envoy),
            ImportFormat::Linkerd => Err(C::Linkerd),
            ImportFormat::GatewayApi => Err(C::GatewayApi),
            ImportFormat::Grpc => Err(C::Grpc),
            ImportFormat::Nginx => Err(C::Nginx),
            ImportFormat::Haproxy => Err(C::Haproxy),
        }
    }
}

impl ImportArgs {
    /// The import these flags ask for: `--virtual-client` only with the
    /// servicegraph format, and not empty; one source for a graph;
    /// `--onto` with, and only with, a configuration.
    pub fn options(self) -> Result<ImportJob, UsageError> {
        let format = match self.format.kind() {
            Ok(f) => f,
            Err(config) => {
                let Some(onto) = self.onto else {
                    return Err(UsageError(format!(
                        "import {}: give the graph to write the retry policies onto, --onto GRAPH (a topology, e.g. one `chaoslab import kiali` wrote)",
                        config.name()
                    )));
                };
                for (flag, set) in [
                    ("--name", self.name.is_some()),
                    ("--rps", self.rps.is_some()),
                    ("--with-faults", self.with_faults),
                    ("--virtual-client", self.virtual_client.is_some()),
                ] {
                    if set {
                        return Err(UsageError(format!(
                            "import {}: {flag} is for a call graph's import; a configuration keeps the graph's",
                            config.name()
                        )));
                    }
                }
                return Ok(ImportJob::Config(import::config::Options {
                    format: config,
                    files: self.sources.iter().map(std::path::PathBuf::from).collect(),
                    onto,
                    output: self.output,
                }));
            }
        };
        if self.onto.is_some() {
            return Err(UsageError(format!(
                "--onto: only a mesh's configuration (istio, envoy, linkerd, gateway-api, grpc, nginx, haproxy) is written onto a graph; {} is a graph of its own",
                format.name()
            )));
        }
        let [source] = <[String; 1]>::try_from(self.sources).map_err(|s| {
            UsageError(format!(
                "import {}: one SOURCE, got {}",
                format.name(),
                s.len()
            ))
        })?;
        match self.virtual_client.as_deref() {
            Some(_) if format != import::Format::Servicegraph => {
                return Err(UsageError(format!(
                    "--virtual-client: only the servicegraph format names the callers outside the mesh (not {})",
                    format.name()
                )))
            }
            Some("") => return Err(UsageError("--virtual-client: give a name".into())),
            _ => {}
        }
        Ok(ImportJob::Graph(import::Options {
            format,
            source,
            output: self.output,
            name: self.name,
            rps: self.rps,
            with_faults: self.with_faults,
            virtual_client: self.virtual_client,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::ValueEnum;

    #[test]
    fn a_like_is_named_in_the_header_as_the_command_line_spells_it() {
        let names: Vec<String> = Like::value_variants()
            .iter()
            .map(|l| {
                let plain = generate::Like::from(*l);
                assert_eq!(plain.name(), super::super::value_name(l));
                plain.name().to_string()
            })
            .collect();
        let all: Vec<&str> = generate::Like::ALL.iter().map(|l| l.name()).collect();
        assert_eq!(names, all);
        assert_eq!(
            generate::Like::from(Like::default()),
            generate::Like::default()
        );
    }

    #[test]
    fn an_import_format_is_named_in_messages_as_the_command_line_spells_it() {
        let names: Vec<String> = ImportFormat::value_variants()
            .iter()
            .map(|f| {
                let name = match f.kind() {
                    Ok(plain) => plain.name(),
                    Err(config) => config.name(),
                };
                assert_eq!(name, super::super::value_name(f));
                name.to_string()
            })
            .collect();
        let all: Vec<&str> = import::Format::ALL.iter().map(|f| f.name()).collect();
        assert_eq!(names[..all.len()], all);
        assert_eq!(
            names[all.len()..],
            [
                "istio",
                "envoy",
                "linkerd",
                "gateway-api",
                "grpc",
                "nginx",
                "haproxy"
            ]
        );
    }

    #[test]
    fn a_virtual_client_is_refused_before_anything_is_read_unless_servicegraph_names_one() {
        let args = |format: ImportFormat, client: Option<&str>| ImportArgs {
            format,
            sources: vec!["/nonexistent/graph.json".into()],
            onto: None,
            output: None,
            name: None,
            rps: None,
            with_faults: false,
            virtual_client: client.map(String::from),
        };
        let e = args(ImportFormat::Kiali, Some("edge"))
            .options()
            .unwrap_err();
        assert_eq!(
            e.0,
            "--virtual-client: only the servicegraph format names the callers outside the mesh (not kiali)"
        );
        let e = args(ImportFormat::Servicegraph, Some(""))
            .options()
            .unwrap_err();
        assert_eq!(e.0, "--virtual-client: give a name");
        let Ok(ImportJob::Graph(o)) = args(ImportFormat::Servicegraph, Some("edge")).options()
        else {
            panic!("a graph import");
        };
        assert_eq!(o.virtual_client.as_deref(), Some("edge"));
        assert_eq!(o.format, import::Format::Servicegraph);
        assert!(args(ImportFormat::Jaeger, None).options().is_ok());
    }
}
