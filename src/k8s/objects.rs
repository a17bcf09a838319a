//! The Kubernetes objects, one builder each, as [`serde_json::Value`]s:
//! the Namespace, the ConfigMap holding the topology, a Deployment and a
//! Service per node, the load Job.
//!
//! Every pod runs the same image with `chaoslab` as its command: a node
//! serves one service on 8080, Prometheus metrics on 9090 and its control
//! API (with the `/healthz` readiness probe) on 9091; the topology file
//! is mounted read-only at `/etc/chaoslab`. Pods run as user 10001
//! (the image's), without privileges, on a read-only root file system.

use serde_json::{json, Map, Value};

/// Where the ConfigMap is mounted.
pub const MOUNT: &str = "/etc/chaoslab";
/// The topology file inside the pods.
pub const TOPOLOGY_FILE: &str = "/etc/chaoslab/topology.yaml";
/// The ConfigMap's key.
pub const TOPOLOGY_KEY: &str = "topology.yaml";
/// A node's service port.
pub const HTTP_PORT: u16 = 8080;
/// A node's Prometheus metrics port.
pub const METRICS_PORT: u16 = 9090;
/// A node's control API port (and readiness probe).
pub const CONTROL_PORT: u16 = 9091;
/// The image's non-root user and group.
pub const UID: u32 = 10001;
/// Where the control API's token Secret is mounted in a node.
pub const TOKEN_MOUNT: &str = "/etc/chaoslab-token";
/// The token file inside a node.
pub const TOKEN_FILE: &str = "/etc/chaoslab-token/token";
/// The Secret's key.
pub const TOKEN_KEY: &str = "token";
/// The label a pod carries to reach the nodes' control APIs (the load
/// Job; a dashboard pod running `chaoslab run --remote` gets it too).
pub const DRIVER_LABEL: &str = "chaoslab.dev/role";
/// Its value.
pub const DRIVER: &str = "driver";

/// What every object of one topology shares.
#[derive(Debug, Clone)]
pub struct Context {
    /// The topology's name as a label (`app.kubernetes.io/part-of`,
    /// `chaoslab.dev/topology`).
    pub topology: String,
    /// The topology's name as written, for annotations.
    pub topology_name: String,
    /// `--namespace`, if given.
    pub namespace: Option<String>,
    /// `--image`.
    pub image: String,
    /// The ConfigMap's name.
    pub config_map: String,
    /// The control token Secret's name.
    pub secret: String,
}

impl Context {
    fn labels(&self, component: &str, service: Option<&str>) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("app.kubernetes.io/name".into(), "chaoslab".into());
        m.insert(
            "app.kubernetes.io/part-of".into(),
            self.topology.clone().into(),
        );
        m.insert("app.kubernetes.io/component".into(), component.into());
        m.insert("chaoslab.dev/topology".into(), self.topology.clone().into());
        if let Some(s) = service {
            m.insert("chaoslab.dev/service".into(), s.into());
        }
        m
    }

    /// The labels that pick one service's pods, and only them.
    fn selector(&self, service: &str) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("app.kubernetes.io/name".into(), "chaoslab".into());
        m.insert("chaoslab.dev/topology".into(), self.topology.clone().into());
        m.insert("chaoslab.dev/service".into(), service.into());
        m
    }

    fn metadata(
        &self,
        name: &str,
        labels: Map<String, Value>,
        annotations: Map<String, Value>,
    ) -> Value {
        let mut m = Map::new();
        m.insert("name".into(), name.into());
        if let Some(ns) = &self.namespace {
            m.insert("namespace".into(), ns.clone().into());
        }
        m.insert("labels".into(), labels.into());
        if !annotations.is_empty() {
            m.insert("annotations".into(), annotations.into());
        }
        Value::Object(m)
    }

    fn names(&self, service: Option<&str>) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert(
            "chaoslab.dev/topology-name".into(),
            self.topology_name.clone().into(),
        );
        if let Some(s) = service {
            m.insert("chaoslab.dev/service-name".into(), s.into());
        }
        m
    }

    /// The container both kinds of pod run: the image, `chaoslab ARGS`,
    /// the topology mounted, no privileges.
    fn container(&self, name: &str, args: Vec<String>, cpu: &str) -> Map<String, Value> {
        let mut c = Map::new();
        c.insert("name".into(), name.into());
        c.insert("image".into(), self.image.clone().into());
        // A kind- or minikube-loaded image is used as loaded.
        c.insert("imagePullPolicy".into(), "IfNotPresent".into());
        c.insert("command".into(), json!(["chaoslab"]));
        c.insert("args".into(), json!(args));
        c.insert(
            "resources".into(),
            json!({
                "requests": { "cpu": cpu, "memory": "64Mi" },
                "limits": { "cpu": "1", "memory": "256Mi" },
            }),
        );
        c.insert(
            "securityContext".into(),
            json!({
                "allowPrivilegeEscalation": false,
                "readOnlyRootFilesystem": true,
                "capabilities": { "drop": ["ALL"] },
            }),
        );
        c.insert(
            "volumeMounts".into(),
            json!([{ "name": "topology", "mountPath": MOUNT, "readOnly": true }]),
        );
        c
    }

    /// `pod` (a node's) with the control token Secret mounted in its
    /// container, readable by the image's user alone.
    fn with_token(&self, mut pod: Map<String, Value>) -> Map<String, Value> {
        if let Some(Value::Array(v)) = pod.get_mut("volumes") {
            v.push(json!({
                "name": "control-token",
                "secret": { "secretName": self.secret, "defaultMode": 0o400 },
            }));
        }
        if let Some(Value::Array(cs)) = pod.get_mut("containers") {
            for c in cs {
                if let Some(Value::Array(m)) = c.get_mut("volumeMounts") {
                    m.push(json!({ "name": "control-token", "mountPath": TOKEN_MOUNT, "readOnly": true }));
                }
            }
        }
        pod
    }

    fn pod_spec(&self, container: Map<String, Value>) -> Map<String, Value> {
        let mut p = Map::new();
        p.insert("automountServiceAccountToken".into(), false.into());
        p.insert(
            "securityContext".into(),
            json!({
                "runAsNonRoot": true,
                "runAsUser": UID,
                "runAsGroup": UID,
                "seccompProfile": { "type": "RuntimeDefault" },
            }),
        );
        p.insert("containers".into(), json!([container]));
        p.insert(
            "volumes".into(),
            json!([{ "name": "topology", "configMap": { "name": self.config_map } }]),
        );
        p
    }
}

/// The Namespace of `--namespace`.
pub fn namespace(ctx: &Context, ns: &str) -> Value {
    let mut meta = Map::new();
    meta.insert("name".into(), ns.into());
    meta.insert("labels".into(), ctx.labels("namespace", None).into());
    json!({ "apiVersion": "v1", "kind": "Namespace", "metadata": meta })
}

/// Whether `text` goes under `binaryData` (base64) rather than `data`:
/// when it holds U+0085 (NEL), the one character a topology file may hold
/// that `kubectl kustomize` does not keep (it reads it as a space).
pub fn needs_binary(text: &str) -> bool {
    text.contains('\u{85}')
}

/// The ConfigMap that holds the topology file as it is, byte for byte:
/// as text under `data`, or base64 under `binaryData` when
/// [`needs_binary`]; the pods' file is the same either way.
pub fn config_map(ctx: &Context, text: &str) -> Value {
    let (key, value) = if needs_binary(text) {
        ("binaryData", base64(text.as_bytes()))
    } else {
        ("data", text.to_string())
    };
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": ctx.metadata(&ctx.config_map, ctx.labels("topology", None), ctx.names(None)),
        key: { TOPOLOGY_KEY: value },
    })
}

/// Standard base64 with padding (RFC 4648).
pub fn base64(bytes: &[u8]) -> String {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ABC[(n >> (18 - 6 * i) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// One node: the service `name` (its label `label`), started with `args`.
pub fn deployment(
    ctx: &Context,
    name: &str,
    label: &str,
    replicas: u32,
    args: Vec<String>,
) -> Value {
    let mut container = ctx.container("node", args, "100m");
    container.insert(
        "ports".into(),
        json!([
            { "name": "http", "containerPort": HTTP_PORT, "protocol": "TCP" },
            { "name": "metrics", "containerPort": METRICS_PORT, "protocol": "TCP" },
            { "name": "control", "containerPort": CONTROL_PORT, "protocol": "TCP" },
        ]),
    );
    container.insert(
        "readinessProbe".into(),
        json!({
            "httpGet": { "path": "/healthz", "port": CONTROL_PORT },
            "periodSeconds": 2,
            "failureThreshold": 3,
        }),
    );
    let mut pod_annotations = ctx.names(Some(name));
    pod_annotations.insert("prometheus.io/scrape".into(), "true".into());
    pod_annotations.insert("prometheus.io/port".into(), METRICS_PORT.to_string().into());
    pod_annotations.insert("prometheus.io/path".into(), "/metrics".into());
    let labels = ctx.labels("node", Some(label));
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": ctx.metadata(label, labels.clone(), ctx.names(Some(name))),
        "spec": {
            "replicas": replicas,
            "selector": { "matchLabels": ctx.selector(label) },
            "template": {
                "metadata": { "labels": labels, "annotations": pod_annotations },
                "spec": ctx.with_token(ctx.pod_spec(container)),
            },
        },
    })
}

/// One shard of the mesh (`name`, its label `label`): one pod serving
/// `ports` listeners from the service port, started with `args`, with the
/// CPU and memory its share asks for (a quarter of a core and 64 MiB at
/// rest, and 1 MiB more for each listener).
pub fn shard_deployment(
    ctx: &Context,
    name: &str,
    label: &str,
    ports: u32,
    args: Vec<String>,
) -> Value {
    let mut d = deployment(ctx, name, label, 1, args);
    let memory = 64 + ports;
    let c = &mut d["spec"]["template"]["spec"]["containers"][0];
    c["resources"] = json!({
        "requests": { "cpu": "250m", "memory": format!("{memory}Mi") },
        "limits": { "cpu": "2", "memory": format!("{}Mi", memory * 4) },
    });
    d
}

/// The headless Service of one shard: its name resolves to its pod's
/// address, where each of its services listens on a port of its own (a
/// Service of a port each would pass the hundred ports an EndpointSlice
/// holds); the metrics and control ports named for Prometheus and the
/// driver.
pub fn headless_service(ctx: &Context, name: &str, label: &str) -> Value {
    let mut s = service(ctx, name, label);
    s["spec"]["clusterIP"] = "None".into();
    s["spec"]["type"] = "ClusterIP".into();
    s
}

/// The Service in front of one node's pods: its name is the host name
/// callers use (`http://LABEL:8080/`).
pub fn service(ctx: &Context, name: &str, label: &str) -> Value {
    let port = |name: &str, port: u16| json!({ "name": name, "port": port, "targetPort": name, "protocol": "TCP" });
    json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": ctx.metadata(label, ctx.labels("node", Some(label)), ctx.names(Some(name))),
        "spec": {
            "type": "ClusterIP",
            "selector": ctx.selector(label),
            "ports": [port("http", HTTP_PORT), port("metrics", METRICS_PORT), port("control", CONTROL_PORT)],
        },
    })
}

/// The Job that drives the entry: `chaoslab load` with `args`.
pub fn job(ctx: &Context, name: &str, args: Vec<String>) -> Value {
    let mut labels = ctx.labels("load", None);
    labels.insert(DRIVER_LABEL.into(), DRIVER.into());
    let mut spec = ctx.pod_spec(ctx.container("load", args, "200m"));
    spec.insert("restartPolicy".into(), "Never".into());
    json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": ctx.metadata(name, labels.clone(), ctx.names(None)),
        "spec": {
            // A load run that fails (the entry not up yet) is tried again.
            "backoffLimit": 3,
            "template": {
                "metadata": { "labels": labels },
                "spec": spec,
            },
        },
    })
}

/// The Secret holding the control API's token, mounted into every node
/// (`--control-token-file`): without it no pod can drive a node.
pub fn secret(ctx: &Context, token: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": ctx.metadata(&ctx.secret, ctx.labels("control-token", None), ctx.names(None)),
        "type": "Opaque",
        "stringData": { TOKEN_KEY: token },
    })
}

/// Who may reach a node's ports: its service port the lab's own pods
/// (the callers and the load Job), its control port only the lab's
/// driver (pods labelled `chaoslab.dev/role: driver` of this topology),
/// its metrics port only Prometheus (pods labelled
/// `app.kubernetes.io/name: prometheus`, in any namespace).
///
/// A shard's pod serves its services on `ports` consecutive ports from
/// the service port: they are let in as one range.
pub fn network_policy(ctx: &Context, ports: u32) -> Value {
    let mut lab = Map::new();
    lab.insert("app.kubernetes.io/name".into(), "chaoslab".into());
    lab.insert("chaoslab.dev/topology".into(), ctx.topology.clone().into());
    let mut nodes = lab.clone();
    nodes.insert("app.kubernetes.io/component".into(), "node".into());
    let mut driver = lab.clone();
    driver.insert(DRIVER_LABEL.into(), DRIVER.into());
    let port = |name: &str| json!([{ "port": name, "protocol": "TCP" }]);
    json!({
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": ctx.metadata(&format!("{}-nodes", ctx.config_map.trim_end_matches("-topology")), ctx.labels("network-policy", None), ctx.names(None)),
        "spec": {
            "podSelector": { "matchLabels": nodes },
            "policyTypes": ["Ingress"],
            "ingress": [
                { "from": [{ "podSelector": { "matchLabels": lab } }], "ports": if ports > 1 {
                    json!([{ "port": HTTP_PORT, "endPort": u32::from(HTTP_PORT) + ports - 1, "protocol": "TCP" }])
                } else {
                    port("http")
                } },
                { "from": [{ "podSelector": { "matchLabels": driver } }], "ports": port("control") },
                {
                    "from": [{
                        "namespaceSelector": {},
                        "podSelector": { "matchLabels": { "app.kubernetes.io/name": "prometheus" } },
                    }],
                    "ports": port("metrics"),
                },
            ],
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc_4648() {
        for (plain, coded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(plain.as_bytes()), coded, "{plain}");
        }
        assert_eq!(base64(&[0xff, 0xfe, 0x85]), "//6F");
    }
}
