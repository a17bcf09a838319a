//! nginx's configuration for one service's sidecar: an `upstream` per
//! edge (the callee's replicas), a `server` listening on loopback per
//! edge, the edge's policy in `proxy_next_upstream*` (see
//! [`chaoslab_model::topology::proxy`] for the words).
//!
//! Written for Debian's `nginx-light` 1.22, run in the foreground as one
//! process (`daemon off; master_process off;`) from a directory of its
//! own (`nginx -p DIR -c DIR/nginx.conf`): its error log, pid and
//! temporary files stay in that directory, and nothing of the machine's
//! own nginx (`/etc/nginx`, `/var/lib/nginx`) is read or written.

use std::fmt::Write as _;
use std::path::Path;

use super::{EdgePlan, ProxyPlan, MAX_CONNECTIONS_PER_EDGE};
use crate::topology::mesh::ProxyKind;
use crate::topology::proxy::{self, Unexpressible};

/// The configuration of `plan`'s nginx in `dir`, each edge listening on
/// its port of `ports` (edge order); refused, naming the edge, when an
/// edge's policy has a part nginx cannot express.
pub(super) fn config(dir: &Path, plan: &ProxyPlan, ports: &[u16]) -> Result<String, Refused> {
    let d = dir.display();
    let edges = plan.edges.len().max(1);
    // Each proxied request holds two connections (the caller's, the
    // upstream's), and every upstream keeps its idle ones.
    let connections = edges * (3 * MAX_CONNECTIONS_PER_EDGE) + 64;
    let mut c = String::new();
    let _ = writeln!(
        c,
        "# {}'s sidecar, written by chaoslab from the policy of its calls.\n\
         daemon off;\n\
         master_process off;\n\
         worker_rlimit_nofile {};\n\
         error_log {d}/error.log warn;\n\
         pid {d}/nginx.pid;\n\
         events {{ worker_connections {connections}; }}\n\
         http {{\n  \
           access_log off;\n  \
           server_tokens off;\n  \
           client_body_temp_path {d}/body;\n  \
           proxy_temp_path {d}/proxy;\n  \
           fastcgi_temp_path {d}/fastcgi;\n  \
           uwsgi_temp_path {d}/uwsgi;\n  \
           scgi_temp_path {d}/scgi;\n  \
           keepalive_requests 1000000;\n  \
           keepalive_timeout 60s;",
        plan.service,
        connections + 64
    );
    for (e, port) in plan.edges.iter().zip(ports) {
        edge(&mut c, e, *port)?;
    }
    c.push_str("}\n");
    Ok(c)
}

/// An edge's policy nginx cannot express.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Refused {
    pub(super) edge: String,
    pub(super) why: Unexpressible,
}

fn edge(c: &mut String, e: &EdgePlan, port: u16) -> Result<(), Refused> {
    let refused = |why| Refused {
        edge: e.name.clone(),
        why,
    };
    if let Some(why) = proxy::unexpressible(ProxyKind::Nginx, &e.policy, e.other_host) {
        return Err(refused(why));
    }
    let next = proxy::nginx_next_upstream(&e.policy.retry_on).map_err(refused)?;
    let ms = e.policy.timeout.as_millis().max(1);
    let _ = writeln!(c, "  # {}\n  upstream e{} {{", e.name, e.edge);
    let balance = proxy::balance(ProxyKind::Nginx, e.lb);
    if !balance.is_empty() {
        let _ = writeln!(c, "    {balance};");
    }
    for s in &e.servers {
        let _ = writeln!(
            c,
            "    server {s} max_fails={} fail_timeout={}s;",
            e.max_fails,
            proxy::nginx_fail_timeout(e.fail_timeout).as_secs()
        );
    }
    let _ = writeln!(
        c,
        "    keepalive {MAX_CONNECTIONS_PER_EDGE};\n  \
         }}\n  \
         server {{\n    \
           listen 127.0.0.1:{port} backlog=4096;\n    \
           location / {{\n      \
             proxy_pass http://e{};\n      \
             proxy_http_version 1.1;\n      \
             proxy_set_header Connection \"\";\n      \
             proxy_next_upstream {};\n      \
             proxy_next_upstream_tries {};\n      \
             proxy_next_upstream_timeout 0;\n      \
             proxy_connect_timeout {ms}ms;\n      \
             proxy_send_timeout {ms}ms;\n      \
             proxy_read_timeout {ms}ms;\n    \
           }}\n  \
         }}",
        e.edge,
        next.join(" "),
        e.policy.attempts.max(1),
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::tests::plan;
    use super::*;

    #[test]
    fn the_policy_becomes_nginx_directives() {
        let p = plan(
            ProxyKind::Nginx,
            "[connect-failure, timeout, reset, 500, 502, 503]",
        );
        let c = config(Path::new("/tmp/x"), &p, &[7001]).unwrap();
        for line in [
            "daemon off;",
            "master_process off;",
            "error_log /tmp/x/error.log warn;",
            "  # A -> B\n  upstream e0 {",
            "    server 127.0.0.1:9001 max_fails=0 fail_timeout=10s;",
            "    server 127.0.0.1:9002 max_fails=0 fail_timeout=10s;",
            "    keepalive 256;",
            "    listen 127.0.0.1:7001 backlog=4096;",
            "      proxy_pass http://e0;",
            "      proxy_set_header Connection \"\";",
            "      proxy_next_upstream error timeout http_500 http_502 http_503;",
            "      proxy_next_upstream_tries 2;",
            "      proxy_next_upstream_timeout 0;",
            "      proxy_read_timeout 1000ms;",
        ] {
            assert!(c.contains(line), "no `{line}` in\n{c}");
        }
    }

    #[test]
    fn what_nginx_cannot_express_is_refused_naming_the_edge() {
        let mut p = plan(ProxyKind::Nginx, "[501]");
        let e = config(Path::new("/tmp/x"), &p, &[7001]).unwrap_err();
        assert_eq!(
            (e.edge.as_str(), e.why),
            ("A -> B", Unexpressible::Status(501))
        );
        p.edges[0].other_host = false;
        let e = config(Path::new("/tmp/x"), &p, &[7001]).unwrap_err();
        assert_eq!(e.why, Unexpressible::SameHost);
    }
}
