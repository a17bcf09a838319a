//! nginx's contexts read: `upstream` blocks into their servers and
//! balancing, and the `http`, `server` and `location` blocks into the
//! proxy directives in force (inner replacing outer) and the routes of
//! each `location` that passes to a callee.

use std::time::Duration;

use super::parse::{arg1, nginx_time, time_arg, Directive};
use crate::import::config::{BadInput, File, Note, Source};

/// An upstream server.
#[derive(Debug, Clone)]
pub(super) struct Server {
    pub(super) addr: String,
    pub(super) line: usize,
    pub(super) weight: u32,
    pub(super) max_fails: u32,
    pub(super) fail_timeout: Duration,
    pub(super) backup: bool,
    pub(super) down: bool,
}

/// An `upstream` block.
#[derive(Debug, Clone)]
pub(super) struct Upstream {
    pub(super) name: String,
    pub(super) line: usize,
    pub(super) servers: Vec<Server>,
    pub(super) lb: Option<(&'static str, usize)>,
    pub(super) notes: Vec<Note>,
}

/// The proxy directives in force in a context, each with its line.
#[derive(Debug, Clone, Default)]
pub(super) struct Proxy {
    pub(super) next: Option<(Vec<String>, usize)>,
    pub(super) tries: Option<(u32, usize)>,
    pub(super) next_timeout: Option<(Duration, usize)>,
    pub(super) connect: Option<(Duration, usize)>,
    pub(super) read: Option<(Duration, usize)>,
    pub(super) send: Option<(Duration, usize)>,
}

/// A location that passes to a callee.
#[derive(Debug, Clone)]
pub(super) struct Route {
    pub(super) location: String,
    pub(super) takes_root: bool,
    pub(super) target: String,
    pub(super) pass_line: usize,
    pub(super) proxy: Proxy,
}

/// The conditions `proxy_next_upstream` knows.
const NEXT_WORDS: [&str; 12] = [
    "error",
    "timeout",
    "invalid_header",
    "http_500",
    "http_502",
    "http_503",
    "http_504",
    "http_403",
    "http_404",
    "http_429",
    "non_idempotent",
    "off",
];

/// Applies a context's proxy directives over the inherited ones.
pub(super) fn proxy_here(f: &File, ds: &[Directive], mut p: Proxy) -> Result<Proxy, BadInput> {
    for d in ds {
        match d.name.as_str() {
            "proxy_next_upstream" => {
                if d.args.is_empty() {
                    return Err(BadInput::at(
                        &f.name,
                        d.line,
                        "`proxy_next_upstream` needs at least one condition",
                    ));
                }
                for a in &d.args {
                    if !NEXT_WORDS.contains(&a.as_str()) {
                        return Err(BadInput::at(
                            &f.name,
                            d.line,
                            format!(
                                "`proxy_next_upstream`: unknown condition `{a}` (nginx knows {})",
                                NEXT_WORDS.join(", ")
                            ),
                        ));
                    }
                }
                p.next = Some((d.args.clone(), d.line));
            }
            "proxy_next_upstream_tries" => {
                let a = arg1(f, d)?;
                let v = a.parse::<u32>().map_err(|_| {
                    BadInput::at(
                        &f.name,
                        d.line,
                        format!(
                            "`proxy_next_upstream_tries`: a whole number (0: no limit), got `{a}`"
                        ),
                    )
                })?;
                p.tries = Some((v, d.line));
            }
            "proxy_next_upstream_timeout" => p.next_timeout = Some((time_arg(f, d)?, d.line)),
            "proxy_connect_timeout" => p.connect = Some((time_arg(f, d)?, d.line)),
            "proxy_read_timeout" => p.read = Some((time_arg(f, d)?, d.line)),
            "proxy_send_timeout" => p.send = Some((time_arg(f, d)?, d.line)),
            _ => {}
        }
    }
    Ok(p)
}

/// An `upstream` block: its servers, balancing, and what is not mapped.
pub(super) fn upstream(f: &File, d: &Directive) -> Result<Upstream, BadInput> {
    let name = arg1(f, d)?.to_string();
    let mut u = Upstream {
        name: name.clone(),
        line: d.line,
        servers: vec![],
        lb: None,
        notes: vec![],
    };
    let note = |u: &mut Upstream, line: usize, text: String| {
        u.notes.push(Note {
            source: Source::new(&f.name, line),
            text,
        })
    };
    for x in d.block.as_deref().unwrap_or_default() {
        match x.name.as_str() {
            "server" => {
                let Some(addr) = x.args.first() else {
                    return Err(BadInput::at(
                        &f.name,
                        x.line,
                        format!("upstream {name}: `server` needs an address"),
                    ));
                };
                let mut srv = Server {
                    addr: addr.clone(),
                    line: x.line,
                    weight: 1,
                    max_fails: 1,
                    fail_timeout: Duration::from_secs(10),
                    backup: false,
                    down: false,
                };
                for p in &x.args[1..] {
                    let (k, v) = p.split_once('=').unwrap_or((p.as_str(), ""));
                    let bad = |what: &str| {
                        BadInput::at(
                            &f.name,
                            x.line,
                            format!("upstream {name}: server {addr}: `{p}`: {what}"),
                        )
                    };
                    match k {
                        "weight" => {
                            srv.weight = v
                                .parse()
                                .ok()
                                .filter(|w| *w > 0)
                                .ok_or_else(|| bad("a weight of 1 or more"))?
                        }
                        "max_fails" => {
                            srv.max_fails = v.parse().map_err(|_| bad("a whole number"))?
                        }
                        "fail_timeout" => {
                            srv.fail_timeout = nginx_time(v).ok_or_else(|| bad("a time"))?
                        }
                        "backup" => srv.backup = true,
                        "down" => srv.down = true,
                        "max_conns" | "slow_start" | "resolve" | "route" | "service"
                        | "drain" => note(
                            &mut u,
                            x.line,
                            format!("upstream {name}: server {addr} `{p}`: not mapped (the lab has no such setting for a replica)"),
                        ),
                        _ => return Err(bad("not a parameter of nginx's `server`")),
                    }
                }
                u.servers.push(srv);
            }
            "random" => {
                let two = x.args.first().map(String::as_str) == Some("two");
                let how = x.args.get(1).map(String::as_str);
                if two && how.is_some_and(|h| h != "least_conn") {
                    note(&mut u, x.line, format!("upstream {name}: `random two {}`: the lab's p2c picks the one with fewer attempts in flight (least_conn)", how.unwrap_or_default()));
                }
                u.lb = Some((if two { "p2c" } else { "random" }, x.line));
            }
            "keepalive" | "keepalive_requests" | "keepalive_time" | "keepalive_timeout"
            | "zone" => {}
            other => note(
                &mut u,
                x.line,
                format!("upstream {name}: `{other}`: not mapped (the lab balances round-robin, random or p2c)"),
            ),
        }
    }
    if u.servers.is_empty() {
        return Err(BadInput::at(
            &f.name,
            d.line,
            format!("upstream {name}: no `server`"),
        ));
    }
    Ok(u)
}

/// Walks `server` and `location` blocks, collecting routes.
pub(super) fn locations(
    f: &File,
    ds: &[Directive],
    inherited: &Proxy,
    server_names: &mut Vec<(String, usize)>,
    routes: &mut Vec<Route>,
    notes: &mut Vec<Note>,
) -> Result<(), BadInput> {
    let here = proxy_here(f, ds, inherited.clone())?;
    for d in ds {
        match d.name.as_str() {
            "server_name" => {
                for a in &d.args {
                    server_names.push((a.clone(), d.line));
                }
            }
            "location" => {
                let Some(body) = &d.block else {
                    return Err(BadInput::at(&f.name, d.line, "`location` needs a block"));
                };
                let (modifier, path) = match d.args.as_slice() {
                    [p] => ("", p.as_str()),
                    [m, p] => (m.as_str(), p.as_str()),
                    _ => {
                        return Err(BadInput::at(
                            &f.name,
                            d.line,
                            "`location` takes a path, and a modifier before it",
                        ))
                    }
                };
                let takes_root = path == "/" && matches!(modifier, "" | "=" | "^~");
                let inner = proxy_here(f, body, here.clone())?;
                for x in body {
                    if x.name == "proxy_pass" {
                        let url = arg1(f, x)?;
                        let rest = url
                            .strip_prefix("http://")
                            .or_else(|| url.strip_prefix("https://"));
                        match rest {
                            Some(r) if !r.contains('$') && !r.starts_with("unix:") => {
                                let hostport = r.split('/').next().unwrap_or(r);
                                routes.push(Route {
                                    location: d.args.join(" "),
                                    takes_root,
                                    target: hostport.to_string(),
                                    pass_line: x.line,
                                    proxy: inner.clone(),
                                });
                            }
                            _ => notes.push(Note {
                                source: Source::new(&f.name, x.line),
                                text: format!("location {}: `proxy_pass {url}`: not mapped (a variable or a socket names no service)", d.args.join(" ")),
                            }),
                        }
                    }
                }
                locations(f, body, &here, server_names, routes, notes)?;
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
    Ok(())
}
