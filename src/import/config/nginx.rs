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

use std::path::Path;
use std::time::Duration;

use serde_yaml::{Mapping, Value};

use super::{n, policy, s, BadInput, File, Note, Read, Rule, ServiceRule, Source};

/// One directive: `name args;` or `name args { block }`.
#[derive(Debug, Clone)]
pub(super) struct Directive {
    pub name: String,
    pub args: Vec<String>,
    pub line: usize,
    pub block: Option<Vec<Directive>>,
}

/// A token and the line it starts on.
#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Word(String),
    Semi,
    Open,
    Close,
}

fn tokens(f: &File) -> Result<Vec<(Tok, usize)>, BadInput> {
    let mut out = vec![];
    let mut line = 1;
    let mut chars = f.text.chars().peekable();
    while let Some(&c) = chars.peek() {
        match c {
            '\n' => {
                line += 1;
                chars.next();
            }
            c if c.is_whitespace() => {
                chars.next();
            }
            '#' => {
                while let Some(&c) = chars.peek() {
                    if c == '\n' {
                        break;
                    }
                    chars.next();
                }
            }
            ';' => {
                out.push((Tok::Semi, line));
                chars.next();
            }
            '{' => {
                out.push((Tok::Open, line));
                chars.next();
            }
            '}' => {
                out.push((Tok::Close, line));
                chars.next();
            }
            _ => {
                let start = line;
                let mut w = String::new();
                while let Some(&c) = chars.peek() {
                    if c.is_whitespace() || matches!(c, ';' | '{' | '}') {
                        break;
                    }
                    if c == '"' || c == '\'' {
                        let q = c;
                        let qline = line;
                        chars.next();
                        let mut closed = false;
                        while let Some(c) = chars.next() {
                            match c {
                                '\\' => {
                                    if let Some(e) = chars.next() {
                                        if e == '\n' {
                                            line += 1;
                                        }
                                        w.push(e);
                                    }
                                }
                                c if c == q => {
                                    closed = true;
                                    break;
                                }
                                c => {
                                    if c == '\n' {
                                        line += 1;
                                    }
                                    w.push(c);
                                }
                            }
                        }
                        if !closed {
                            return Err(BadInput::at(
                                &f.name,
                                qline,
                                format!("a quoted string opened here is never closed (`{q}`)"),
                            ));
                        }
                        continue;
                    }
                    if c == '\\' {
                        chars.next();
                        if let Some(e) = chars.next() {
                            w.push(e);
                        }
                        continue;
                    }
                    w.push(c);
                    chars.next();
                }
                out.push((Tok::Word(w), start));
            }
        }
    }
    Ok(out)
}

/// Parses nginx's block syntax, keeping each directive's line.
pub(super) fn parse(f: &File) -> Result<Vec<Directive>, BadInput> {
    let toks = tokens(f)?;
    let mut i = 0;
    let top = block(f, &toks, &mut i, None)?;
    Ok(top)
}

/// Directives up to the `}` closing a block opened at `open` (`None`: the
/// file's end).
fn block(
    f: &File,
    toks: &[(Tok, usize)],
    i: &mut usize,
    open: Option<(&str, usize)>,
) -> Result<Vec<Directive>, BadInput> {
    let mut out = vec![];
    loop {
        let Some((t, line)) = toks.get(*i) else {
            return match open {
                None => Ok(out),
                Some((name, at)) => Err(BadInput::at(
                    &f.name,
                    at,
                    format!(
                        "the block of `{name}` opened here is never closed (a `}}` is missing)"
                    ),
                )),
            };
        };
        match t {
            Tok::Close => {
                *i += 1;
                return match open {
                    Some(_) => Ok(out),
                    None => Err(BadInput::at(
                        &f.name,
                        *line,
                        "unexpected `}`: no block is open here",
                    )),
                };
            }
            Tok::Semi => {
                return Err(BadInput::at(
                    &f.name,
                    *line,
                    "unexpected `;`: no directive before it",
                ))
            }
            Tok::Open => {
                return Err(BadInput::at(
                    &f.name,
                    *line,
                    "unexpected `{`: a block needs a directive's name before it",
                ))
            }
            Tok::Word(name) => {
                let (name, start) = (name.clone(), *line);
                *i += 1;
                let mut args = vec![];
                loop {
                    match toks.get(*i) {
                        Some((Tok::Word(w), _)) => {
                            args.push(w.clone());
                            *i += 1;
                        }
                        Some((Tok::Semi, _)) => {
                            *i += 1;
                            out.push(Directive {
                                name,
                                args,
                                line: start,
                                block: None,
                            });
                            break;
                        }
                        Some((Tok::Open, _)) => {
                            *i += 1;
                            let inner = block(f, toks, i, Some((&name, start)))?;
                            out.push(Directive {
                                name,
                                args,
                                line: start,
                                block: Some(inner),
                            });
                            break;
                        }
                        Some((Tok::Close, _)) | None => {
                            return Err(BadInput::at(
                                &f.name,
                                start,
                                format!("`{name}` is not ended by `;`"),
                            ));
                        }
                    }
                }
            }
        }
    }
}

/// nginx's time: `10s`, `500ms`, `1m30s`, a bare number of seconds.
pub(super) fn nginx_time(v: &str) -> Option<Duration> {
    let v = v.trim();
    if v.is_empty() {
        return None;
    }
    let mut total = 0.0f64;
    let mut rest = v;
    while !rest.is_empty() {
        rest = rest.trim_start();
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        if digits == 0 {
            return None;
        }
        let x: f64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c.is_whitespace())
            .unwrap_or(rest.len());
        let secs = match &rest[..unit_len] {
            "" | "s" => 1.0,
            "ms" => 0.001,
            "m" => 60.0,
            "h" => 3600.0,
            "d" => 86_400.0,
            "w" => 604_800.0,
            "M" => 2_592_000.0,
            "y" => 31_536_000.0,
            _ => return None,
        };
        total += x * secs;
        rest = &rest[unit_len..];
    }
    Some(Duration::from_secs_f64(total))
}

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

/// An upstream server.
#[derive(Debug, Clone)]
struct Server {
    addr: String,
    line: usize,
    weight: u32,
    max_fails: u32,
    fail_timeout: Duration,
    backup: bool,
    down: bool,
}

/// An `upstream` block.
#[derive(Debug, Clone)]
struct Upstream {
    name: String,
    line: usize,
    servers: Vec<Server>,
    lb: Option<(&'static str, usize)>,
    notes: Vec<Note>,
}

/// The proxy directives in force in a context, each with its line.
#[derive(Debug, Clone, Default)]
struct Proxy {
    next: Option<(Vec<String>, usize)>,
    tries: Option<(u32, usize)>,
    next_timeout: Option<(Duration, usize)>,
    connect: Option<(Duration, usize)>,
    read: Option<(Duration, usize)>,
    send: Option<(Duration, usize)>,
}

/// A location that passes to a callee.
#[derive(Debug, Clone)]
struct Route {
    location: String,
    takes_root: bool,
    target: String,
    pass_line: usize,
    proxy: Proxy,
}

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

fn arg1<'a>(f: &File, d: &'a Directive) -> Result<&'a str, BadInput> {
    match d.args.as_slice() {
        [a] => Ok(a),
        _ => Err(BadInput::at(
            &f.name,
            d.line,
            format!("`{}` takes one value, got {}", d.name, d.args.len()),
        )),
    }
}

fn time_arg(f: &File, d: &Directive) -> Result<Duration, BadInput> {
    let a = arg1(f, d)?;
    nginx_time(a).ok_or_else(|| {
        BadInput::at(
            &f.name,
            d.line,
            format!("`{}`: `{a}` is not a time (write e.g. 10s, 500ms)", d.name),
        )
    })
}

/// Applies a context's proxy directives over the inherited ones.
fn proxy_here(f: &File, ds: &[Directive], mut p: Proxy) -> Result<Proxy, BadInput> {
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

fn upstream(f: &File, d: &Directive) -> Result<Upstream, BadInput> {
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
fn locations(
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
    // Whose sidecar.
    let caller = match service_comment(&f.text) {
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
    };
    // One route per callee: the one the lab's `GET /` takes.
    let mut chosen: Vec<(String, Route)> = vec![];
    for r in &routes {
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
    if chosen.is_empty() {
        notes.push(Note {
            source: Source::new(&f.name, 1),
            text: format!("no location passes to a service (`proxy_pass http://NAME`): nothing set on {caller}'s calls"),
        });
    }
    let mut sidecar_from: Option<(u32, Duration, usize, String)> = None;
    let mut used_upstreams: Vec<&Upstream> = vec![];
    for (target, r) in &chosen {
        let up = upstreams.iter().find(|u| u.name == *target);
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
                "invalid_header" => "the lab's callees answer no empty or invalid header, so it retries nothing there",
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
            if !used_upstreams.iter().any(|x| x.name == u.name) {
                used_upstreams.push(u);
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
        out.rules.push(Rule {
            host,
            from: Some(caller.clone()),
            policy: pol,
            source: Source::new(&f.name, source_line),
            what,
        });
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
    // The sidecar: one max_fails and fail_timeout for every server.
    for u in &used_upstreams {
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
