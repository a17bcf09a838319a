//! nginx: an nginx.conf is the sidecar of one service (SPEC sections 17
//! and 18), read into a `sidecar: { kind: nginx, max_fails, fail_timeout }`
//! on that service and a policy on each of its calls that a `location`
//! passes to (`proxy_pass http://NAME`).
//!
//! **Whose sidecar.** The caller is named by a comment `# chaoslab:
//! service NAME` anywhere in the file; else by the file's name up to its
//! first dot (`reviews.conf`, `reviews.nginx.conf`), unless that is
//! `nginx` or `default`; else by the first `server_name` that is a name
//! (not `_`, `localhost`, a wildcard or a regex). A caller taken from the
//! file name or `server_name` is listed as a note; none at all is an
//! error.
//!
//! **The callee.** `proxy_pass http://NAME` names an `upstream NAME`
//! block, or a host. The callee is the host every server of the upstream
//! names when they all name one (not an address), else the upstream's
//! name; for a host, the host (its port dropped).
//!
//! **Attempts.** nginx passes a failed request to the next server, each
//! server at most once (the upstream module's documentation: "until all
//! of the functioning servers will be tried"), so a call makes at most
//! `proxy_next_upstream_tries` attempts (0, the default, is no limit) and
//! at most one per server: the upstream's servers not marked `down`, its
//! `backup` servers included (nginx 1.22's `ngx_http_upstream_tries`
//! counts both; the backups are tried once every primary has been). A
//! host rather than an upstream is one server: no retry.
//!
//! **Conditions.** `proxy_next_upstream` (default `error timeout`, the
//! proxy module's documentation) in the lab's words, as the lab's own
//! sidecar writes them back (docs/sidecars.md): `error timeout` is
//! `reset`, `error` alone `connect-failure`, `timeout` alone `timeout`,
//! `http_NNN` the status NNN, `off` nothing (one attempt).
//! `invalid_header` (the lab's callees answer no bad header) and
//! `non_idempotent` (the lab's requests are GETs, which nginx retries
//! anyway) are listed as not mapped.
//!
//! **Inheritance.** `proxy_next_upstream*` and the `proxy_*_timeout`
//! directives are taken from `http`, then `server`, then each enclosing
//! `location`, an inner one replacing an outer one, as nginx merges
//! them. The per-try `timeout` is `proxy_read_timeout` (else
//! `proxy_connect_timeout`, else `proxy_send_timeout`) where the file sets
//! one; nginx's 60 s default is not written (the lab's own stands).
//!
//! **The sidecar.** `max_fails` and `fail_timeout` (nginx's defaults 1
//! and 10 s) of the servers the calls use; the lab's sidecar has one of
//! each for every server, so servers that disagree are listed. Weights
//! that differ, `backup` as a pool of its own, `down`, `max_conns`,
//! `slow_start` and balancing other than round robin, `random` and
//! `random two` are listed as not mapped; `keepalive*` and `zone` bear
//! on no retry and are read silently (the lab's sidecar keeps its own
//! connections). `include` is not followed.
//!
//! **Routes.** The lab's requests are `GET /`: of the locations passing
//! to one callee, `location /` (or `= /`, `^~ /`) is the one taken, else
//! the first in the file; the others are listed as not taken.
//!
//! The reading is in three files: `parse.rs`, nginx's block syntax into
//! directives with their lines; `blocks.rs`, the `upstream` blocks and the
//! proxy directives in force in each `server` and `location`; and this one,
//! their mapping onto the lab's policy and sidecar.

mod blocks;
mod parse;

use std::path::Path;
use std::time::Duration;

use serde_yaml::{Mapping, Value};

use super::{n, policy, s, BadInput, File, Note, Read, Rule, ServiceRule, Source};
use blocks::{locations, proxy_here, upstream, Proxy, Route, Server, Upstream};
use parse::{parse, Directive};

/// A duration as the lab's YAML writes it (`10s`, `250ms`).
pub(super) fn lab_time(d: Duration) -> Value {
    if d.subsec_nanos() == 0 {
        s(format!("{}s", d.as_secs()))
    } else {
        s(format!("{}ms", d.as_millis().max(1)))
    }
}

/// The service a `# chaoslab: service NAME` comment names, and its line.
pub(super) fn service_comment(text: &str) -> Option<(String, usize)> {
    text.lines().enumerate().find_map(|(i, l)| {
        let c = l.trim_start().strip_prefix('#')?.trim();
        let rest = c.strip_prefix("chaoslab:")?.trim();
        let name = rest.strip_prefix("service")?.trim();
        let name = name.split_whitespace().next()?;
        Some((name.to_string(), i + 1))
    })
}

/// The file's name up to its first dot, unless it is one of `generic`.
pub(super) fn file_stem(name: &str, generic: &[&str]) -> Option<String> {
    let base = Path::new(name).file_name()?.to_str()?;
    let stem = base.split('.').next()?.trim();
    if stem.is_empty() || generic.contains(&stem.to_ascii_lowercase().as_str()) {
        None
    } else {
        Some(stem.to_string())
    }
}

/// The host of an address (`host:port`, `[v6]:port`, `host`), and whether
/// it is a name rather than an address.
pub(super) fn addr_host(addr: &str) -> (String, bool) {
    let a = addr.trim();
    if let Some(rest) = a.strip_prefix('[') {
        let h = rest.split(']').next().unwrap_or(rest);
        return (h.to_string(), false);
    }
    let h = match a.rsplit_once(':') {
        Some((h, p)) if p.chars().all(|c| c.is_ascii_digit()) => h,
        _ => a,
    };
    let is_ip = h.parse::<std::net::IpAddr>().is_ok() || h.contains('/') || h.contains('@');
    (h.to_string(), !is_ip && !h.is_empty())
}

/// The callee of a pool called `name` whose servers are at `addrs`: the one
/// name every server gives, else the pool's name.
pub(super) fn callee(name: &str, addrs: &[&str]) -> String {
    let hosts: Vec<(String, bool)> = addrs.iter().map(|a| addr_host(a)).collect();
    match hosts.first() {
        Some((h, true)) if hosts.iter().all(|(x, named)| *named && x == h) => h.clone(),
        _ => name.to_string(),
    }
}

/// The lab's `retry_on` for nginx's conditions, and what has no word.
fn conditions(words: &[String]) -> (Vec<Value>, Vec<&'static str>) {
    let has = |w: &str| words.iter().any(|x| x == w);
    if has("off") {
        return (vec![], vec![]);
    }
    let mut on = vec![];
    match (has("error"), has("timeout")) {
        (true, true) => on.push(s("reset")),
        (true, false) => on.push(s("connect-failure")),
        (false, true) => on.push(s("timeout")),
        (false, false) => {}
    }
    for (word, code) in [
        ("http_500", 500),
        ("http_502", 502),
        ("http_503", 503),
        ("http_504", 504),
        ("http_403", 403),
        ("http_404", 404),
        ("http_429", 429),
    ] {
        if has(word) {
            on.push(n(code));
        }
    }
    let mut unmapped = vec![];
    if has("invalid_header") {
        unmapped.push("invalid_header");
    }
    if has("non_idempotent") {
        unmapped.push("non_idempotent");
    }
    (on, unmapped)
}

/// Reads one nginx.conf.
pub fn read(f: &File, out: &mut Read) -> Result<(), BadInput> {
    let top = parse(f)?;
    // The http context: the `http` block, or the file itself (a conf.d
    // snippet).
    let http: &[Directive] = top
        .iter()
        .find(|d| d.name == "http")
        .and_then(|d| d.block.as_deref())
        .unwrap_or(&top);
    let mut upstreams = vec![];
    for d in http.iter().filter(|d| d.name == "upstream") {
        upstreams.push(upstream(f, d)?);
    }
    let base = proxy_here(f, http, Proxy::default())?;
    let mut server_names = vec![];
    let mut routes = vec![];
    let mut notes = vec![];
    for d in http {
        match d.name.as_str() {
            "server" => {
                let body = d.block.as_deref().unwrap_or_default();
                locations(f, body, &base, &mut server_names, &mut routes, &mut notes)?;
            }
            "include" => notes.push(Note {
                source: Source::new(&f.name, d.line),
                text: format!(
                    "`include {}`: not followed (give the included file its own reading)",
                    d.args.join(" ")
                ),
            }),
            _ => {}
        }
    }
    let caller = whose_sidecar(f, &server_names, &mut notes)?;
    let chosen = one_route_per_callee(f, &routes, &upstreams, &mut notes);
    if chosen.is_empty() {
        notes.push(Note {
            source: Source::new(&f.name, 1),
            text: format!("no location passes to a service (`proxy_pass http://NAME`): nothing set on {caller}'s calls"),
        });
    }
    let mut used_upstreams: Vec<&Upstream> = vec![];
    for (target, r) in &chosen {
        let up = upstreams.iter().find(|u| u.name == *target);
        out.rules
            .push(call_rule(f, &caller, (target, r), up, &mut notes));
        if let Some(u) = up {
            if !used_upstreams.iter().any(|x| x.name == u.name) {
                used_upstreams.push(u);
            }
        }
    }
    for u in upstreams
        .iter()
        .filter(|u| !used_upstreams.iter().any(|x| x.name == u.name))
    {
        notes.push(Note {
            source: Source::new(&f.name, u.line),
            text: format!(
                "upstream {}: no location the lab's requests take passes to it",
                u.name
            ),
        });
    }
    let sidecar_from = sidecar_limits(f, &used_upstreams, &mut notes);
    if !chosen.is_empty() {
        let mut sidecar = Mapping::new();
        sidecar.insert("kind".into(), s("nginx"));
        let (line, what) = match &sidecar_from {
            Some((mf, ft, line, up)) => {
                sidecar.insert("max_fails".into(), n(*mf));
                sidecar.insert("fail_timeout".into(), lab_time(*ft));
                (
                    *line,
                    format!(
                        "nginx upstream {up}: max_fails={mf} fail_timeout={}",
                        lab_time(*ft).as_str().unwrap_or_default()
                    ),
                )
            }
            None => (
                chosen[0].1.pass_line,
                "nginx: the sidecar carrying these calls".to_string(),
            ),
        };
        let mut set = Mapping::new();
        set.insert("sidecar".into(), Value::Mapping(sidecar));
        out.services.push(ServiceRule {
            host: caller,
            set,
            source: Source::new(&f.name, line),
            what,
        });
    }
    notes.sort();
    out.notes.extend(notes);
    Ok(())
}

/// Whose sidecar this nginx is: the `# chaoslab: service NAME` comment,
/// else the file's name, else the first `server_name` that names a host.
fn whose_sidecar(
    f: &File,
    server_names: &[(String, usize)],
    notes: &mut Vec<Note>,
) -> Result<String, BadInput> {
    Ok(match service_comment(&f.text) {
        Some((name, _)) => name,
        None => {
            let (name, line, from) = if let Some(stem) = file_stem(&f.name, &["nginx", "default"]) {
                (stem, 1, "the file's name")
            } else if let Some((name, line)) = server_names.iter().find(|(n, _)| {
                !(n == "_"
                    || n == "localhost"
                    || n.is_empty()
                    || n.contains('*')
                    || n.starts_with('~'))
            }) {
                (name.clone(), *line, "its `server_name`")
            } else {
                return Err(BadInput::at(
                    &f.name,
                    1,
                    "cannot tell whose sidecar this nginx is: write `# chaoslab: service NAME` in the file",
                ));
            };
            notes.push(Note {
                source: Source::new(&f.name, line),
                text: format!("this nginx is taken to be the sidecar of {name}, from {from} (write `# chaoslab: service NAME` to say so)"),
            });
            name
        }
    })
}

/// One route per callee: the one the lab's `GET /` takes (a location that
/// takes the root over one that does not, else the first), with a note
/// for each route left.
fn one_route_per_callee(
    f: &File,
    routes: &[Route],
    upstreams: &[Upstream],
    notes: &mut Vec<Note>,
) -> Vec<(String, Route)> {
    let mut chosen: Vec<(String, Route)> = vec![];
    for r in routes {
        let up = upstreams.iter().find(|u| u.name == r.target);
        let host = match up {
            Some(u) => callee(
                &u.name,
                &u.servers
                    .iter()
                    .map(|s| s.addr.as_str())
                    .collect::<Vec<_>>(),
            ),
            None => addr_host(&r.target).0,
        };
        match chosen.iter_mut().find(|(t, _)| *t == r.target) {
            Some((_, first)) => {
                let (keep, drop) = if r.takes_root && !first.takes_root {
                    let old = first.clone();
                    *first = r.clone();
                    (r.clone(), old)
                } else {
                    (first.clone(), r.clone())
                };
                notes.push(Note {
                    source: Source::new(&f.name, drop.pass_line),
                    text: format!(
                        "location {} also passes to {host}: not taken (the lab's requests, GET /, take location {})",
                        drop.location, keep.location
                    ),
                });
            }
            None => chosen.push((r.target.clone(), r.clone())),
        }
    }
    chosen
}

/// The rule a chosen route sets on the caller's calls to its callee: the
/// attempts its upstream's servers and `proxy_next_upstream` give, the
/// conditions, the per-try timeout, the balancer; a note for each
/// directive the lab does not map.
fn call_rule(
    f: &File,
    caller: &str,
    (target, r): (&String, &Route),
    up: Option<&Upstream>,
    notes: &mut Vec<Note>,
) -> Rule {
    let p = &r.proxy;
    let at_loc = format!("location {}", r.location);
    let (host, servers) = match up {
        Some(u) => {
            let addrs: Vec<&str> = u.servers.iter().map(|s| s.addr.as_str()).collect();
            let usable = u.servers.iter().filter(|s| !s.down).count() as u32;
            (callee(&u.name, &addrs), usable)
        }
        None => {
            notes.push(Note {
                source: Source::new(&f.name, r.pass_line),
                text: format!("{at_loc}: `proxy_pass` to the host {target}, not an upstream: one server, so nginx never retries (a name resolving to several addresses would be one server each)"),
            });
            (addr_host(target).0, 1)
        }
    };
    let default_next = vec!["error".to_string(), "timeout".to_string()];
    let (words, next_line) = match &p.next {
        Some((w, l)) => (w.clone(), Some(*l)),
        None => (default_next, None),
    };
    let (on, unmapped) = conditions(&words);
    for w in unmapped {
        let why = match w {
            "invalid_header" => {
                "the lab's callees answer no empty or invalid header, so it retries nothing there"
            }
            _ => "the lab's requests are GETs, which nginx passes to the next server anyway",
        };
        notes.push(Note {
            source: Source::new(&f.name, next_line.unwrap_or(r.pass_line)),
            text: format!("{at_loc}: proxy_next_upstream `{w}`: not mapped ({why})"),
        });
    }
    let off = words.iter().any(|w| w == "off");
    let tries = p.tries.map_or(0, |(t, _)| t);
    let attempts = if off {
        1
    } else if tries == 0 {
        servers.max(1)
    } else {
        tries.min(servers.max(1))
    };
    let mut pol = policy([
        ("preset", s("retry")),
        ("attempts", n(attempts)),
        ("retry_on", Value::Sequence(on)),
        ("backoff", s("0ms")),
    ]);
    let timeouts = [
        ("proxy_read_timeout", p.read),
        ("proxy_connect_timeout", p.connect),
        ("proxy_send_timeout", p.send),
    ];
    if let Some((name, (t, _))) = timeouts.iter().find_map(|(k, v)| v.map(|v| (*k, v))) {
        pol.insert("timeout".into(), lab_time(t));
        for (other, v) in timeouts {
            if let Some((o, l)) = v {
                if o != t {
                    notes.push(Note {
                        source: Source::new(&f.name, l),
                        text: format!("{at_loc}: `{other}` {}: not mapped (the lab has one per-try timeout; {name} is taken)", super::docs::lab_duration(o).as_str().unwrap_or_default()),
                    });
                }
            }
        }
    }
    if let Some((t, l)) = p.next_timeout {
        if !t.is_zero() {
            notes.push(Note {
                source: Source::new(&f.name, l),
                text: format!("{at_loc}: `proxy_next_upstream_timeout`: not mapped (the lab bounds a call's tries by their number and its deadline, not by a time of their own)"),
            });
        }
    }
    if let Some(u) = up {
        if let Some((lb, _)) = u.lb {
            pol.insert("lb".into(), s(lb));
        }
    }
    let source_line = p.tries.map(|(_, l)| l).or(next_line).unwrap_or(r.pass_line);
    let what = format!(
        "nginx {at_loc} proxy_pass http://{target}{}",
        match (&p.tries, &p.next) {
            (Some((t, _)), _) => format!(", proxy_next_upstream_tries {t}"),
            (None, Some((w, _))) => format!(", proxy_next_upstream {}", w.join(" ")),
            (None, None) => " (nginx's default proxy_next_upstream error timeout)".into(),
        }
    );
    Rule {
        host,
        from: Some(caller.to_string()),
        policy: pol,
        source: Source::new(&f.name, source_line),
        what,
    }
}

/// The sidecar's one `max_fails` and `fail_timeout`, and where they were
/// read: the first live server's of the upstreams used, with a note for
/// each server that says otherwise, is down, is a backup, or weighs
/// differently.
fn sidecar_limits(
    f: &File,
    used_upstreams: &[&Upstream],
    notes: &mut Vec<Note>,
) -> Option<(u32, Duration, usize, String)> {
    let mut sidecar_from: Option<(u32, Duration, usize, String)> = None;
    for u in used_upstreams {
        notes.extend(u.notes.iter().cloned());
        let live: Vec<&Server> = u.servers.iter().filter(|s| !s.down).collect();
        for srv in &u.servers {
            if srv.down {
                notes.push(Note {
                    source: Source::new(&f.name, srv.line),
                    text: format!("upstream {}: server {} `down`: not mapped (nginx sends it nothing and it is not counted in the tries; the lab's callee is the graph's replicas)", u.name, srv.addr),
                });
            }
            if srv.backup {
                notes.push(Note {
                    source: Source::new(&f.name, srv.line),
                    text: format!("upstream {}: server {} `backup`: the lab has one pool of replicas; nginx tries a backup only once every primary has failed the call or is out, so it is counted in the call's attempts but not kept apart", u.name, srv.addr),
                });
            }
        }
        if live.len() > 1 && live.iter().any(|s| s.weight != live[0].weight) {
            notes.push(Note {
                source: Source::new(&f.name, u.line),
                text: format!(
                    "upstream {}: weights {}: not mapped (the lab's replicas share calls equally)",
                    u.name,
                    live.iter()
                        .map(|s| s.weight.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            });
        }
        for srv in live {
            match &sidecar_from {
                None => {
                    sidecar_from = Some((srv.max_fails, srv.fail_timeout, srv.line, u.name.clone()))
                }
                Some((mf, ft, line, _)) if (*mf, *ft) != (srv.max_fails, srv.fail_timeout) => {
                    notes.push(Note {
                        source: Source::new(&f.name, srv.line),
                        text: format!("upstream {}: server {} max_fails={} fail_timeout={}: not mapped (the lab's sidecar has one max_fails and fail_timeout for every server; those of line {line} are taken)", u.name, srv.addr, srv.max_fails, lab_time(srv.fail_timeout).as_str().unwrap_or_default()),
                    });
                }
                Some(_) => {}
            }
        }
    }
    sidecar_from
}
