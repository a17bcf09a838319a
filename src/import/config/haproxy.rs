//! HAProxy: a haproxy.cfg is the sidecar of one service (SPEC sections 17
//! and 18), read into a `sidecar: { kind: haproxy }` on that service and
//! a policy on its calls into each `backend` (or `listen`) section.
//!
//! **Whose sidecar.** A comment `# chaoslab: service NAME`; else the
//! file's name up to its first dot unless it is `haproxy` or `default`;
//! else the first `frontend`'s name. Guessed ones are listed as notes.
//!
//! **The callee.** The host every `server` of the backend names when they
//! all name one (not an address), else the backend's name.
//!
//! **Defaults.** A proxy section takes the settings of the `defaults`
//! section before it, or of the named one `from NAME` says; a `defaults
//! NAME from OTHER` starts from OTHER's, and any other `defaults` starts
//! afresh (HAProxy's configuration manual, section 4). A setting in the
//! section itself wins.
//!
//! **Mapped.** `retries N` (HAProxy's default 3) is `attempts: N + 1`;
//! `retry-on` (default `conn-failure`) in the lab's words as the lab's own
//! sidecar writes them back (docs/sidecars.md): `conn-failure`,
//! `empty-response` and `response-timeout` together are `reset`,
//! `conn-failure` alone `connect-failure`, `response-timeout` alone
//! `timeout`, a status that status, `all-retryable-errors` all of those
//! with 500, 502, 503 and 504, `none` nothing (one attempt). `option
//! redispatch` is `retry_other_host: true`, its absence (or `no option
//! redispatch`) `false`: HAProxy then retries the same server. `timeout
//! server` is the per-try `timeout`; `balance roundrobin`, `static-rr`,
//! `random` and `random(2)` are `lb`.
//!
//! **Not mapped, and listed.** `empty-response` without the other two,
//! `junk-response` and `0rtt-rejected` (nothing the lab's callees answer);
//! `timeout connect` when it differs from `timeout server`; other
//! balancing; server weights that differ, `backup`, `disabled`; health
//! checks (`check`, `fall`, `rise`, `inter`, `observe`, `error-limit`,
//! `on-error`, `option httpchk`...): the lab gives HAProxy none.

use std::time::Duration;

use serde_yaml::{Mapping, Value};

use super::nginx::{callee, file_stem, lab_time, service_comment};
use super::{n, policy, s, BadInput, File, Note, Read, Rule, ServiceRule, Source};

/// The statuses HAProxy's `retry-on` can name.
const STATUSES: [u16; 10] = [401, 403, 404, 408, 425, 500, 501, 502, 503, 504];
const WORDS: [&str; 7] = [
    "none",
    "conn-failure",
    "empty-response",
    "junk-response",
    "response-timeout",
    "0rtt-rejected",
    "all-retryable-errors",
];
/// Server parameters that belong to health checks, which the lab does
/// not give HAProxy.
const CHECKS: [&str; 14] = [
    "check",
    "fall",
    "rise",
    "inter",
    "fastinter",
    "downinter",
    "observe",
    "error-limit",
    "on-error",
    "on-marked-down",
    "on-marked-up",
    "agent-check",
    "track",
    "slowstart",
];

/// Retry settings in force in a section, each with its line.
#[derive(Debug, Clone, Default)]
struct Settings {
    retries: Option<(u32, usize)>,
    retry_on: Option<(Vec<String>, usize)>,
    redispatch: Option<(bool, Option<i64>, usize)>,
    connect: Option<(Duration, usize)>,
    server: Option<(Duration, usize)>,
    balance: Option<(String, usize)>,
    /// `default-server` parameters.
    default_server: Vec<(String, usize)>,
    /// `option httpchk`, `http-check`: health checks.
    checks: Option<usize>,
}

#[derive(Debug, Clone)]
struct ServerLine {
    name: String,
    addr: String,
    line: usize,
    params: Vec<String>,
}

#[derive(Debug, Clone)]
struct Section {
    kind: String,
    name: String,
    line: usize,
    from: Option<String>,
    settings: Settings,
    servers: Vec<ServerLine>,
}

/// Splits a line into words: `#` comments, quotes and `\` escapes.
fn words(f: &File, line: &str, at: usize) -> Result<Vec<String>, BadInput> {
    let mut out = vec![];
    let mut w = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    let mut quote: Option<char> = None;
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some('"'), '\\') | (None, '\\') => {
                if let Some(e) = chars.next() {
                    w.push(e);
                    in_word = true;
                }
            }
            (Some(_), c) => w.push(c),
            (None, '#') => break,
            (None, '"') | (None, '\'') => {
                quote = Some(c);
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    out.push(std::mem::take(&mut w));
                    in_word = false;
                }
            }
            (None, c) => {
                w.push(c);
                in_word = true;
            }
        }
    }
    if quote.is_some() {
        return Err(BadInput::at(
            &f.name,
            at,
            "a quoted string is not closed on its line",
        ));
    }
    if in_word {
        out.push(w);
    }
    Ok(out)
}

/// HAProxy's time: milliseconds unless a unit (`us`, `ms`, `s`, `m`, `h`,
/// `d`) says otherwise.
fn haproxy_time(v: &str) -> Option<Duration> {
    let digits = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    if digits == 0 {
        return None;
    }
    let x: f64 = v[..digits].parse().ok()?;
    let secs = match &v[digits..] {
        "" | "ms" => x / 1000.0,
        "us" => x / 1e6,
        "s" => x,
        "m" => x * 60.0,
        "h" => x * 3600.0,
        "d" => x * 86_400.0,
        _ => return None,
    };
    Some(Duration::from_secs_f64(secs))
}

const SECTIONS: [&str; 15] = [
    "global",
    "defaults",
    "frontend",
    "backend",
    "listen",
    "peers",
    "resolvers",
    "userlist",
    "mailers",
    "cache",
    "program",
    "http-errors",
    "ring",
    "log-forward",
    "crt-store",
];

fn parse(f: &File) -> Result<Vec<Section>, BadInput> {
    let mut out: Vec<Section> = vec![];
    for (i, raw) in f.text.lines().enumerate() {
        let at = i + 1;
        let w = words(f, raw, at)?;
        let Some(first) = w.first() else { continue };
        if SECTIONS.contains(&first.as_str()) {
            out.push(section(f, &w, at)?);
            continue;
        }
        let Some(sec) = out.last_mut() else {
            return Err(BadInput::at(
                &f.name,
                at,
                format!("`{first}` outside any section (a haproxy.cfg starts with `global`, `defaults`, `frontend`, `backend` or `listen`)"),
            ));
        };
        if !matches!(
            sec.kind.as_str(),
            "defaults" | "frontend" | "backend" | "listen"
        ) {
            continue;
        }
        setting(f, sec, &w, at)?;
    }
    Ok(out)
}

/// A section's first line: its kind, its name, the defaults section it
/// names (`from`).
fn section(f: &File, w: &[String], at: usize) -> Result<Section, BadInput> {
    let kind = w[0].clone();
    let named = matches!(kind.as_str(), "frontend" | "backend" | "listen");
    let mut name = String::new();
    let mut from = None;
    let mut rest = &w[1..];
    if let Some(x) = rest.first().filter(|x| *x != "from") {
        name = x.clone();
        rest = &rest[1..];
    }
    if let [kw, src, ..] = rest {
        if kw == "from" {
            from = Some(src.clone());
        }
    } else if rest.first().is_some_and(|x| x == "from") {
        return Err(BadInput::at(
            &f.name,
            at,
            format!("{kind}: `from` needs the name of a defaults section"),
        ));
    }
    if named && name.is_empty() {
        return Err(BadInput::at(&f.name, at, format!("`{kind}` needs a name")));
    }
    Ok(Section {
        kind,
        name,
        line: at,
        from,
        settings: Settings::default(),
        servers: vec![],
    })
}

/// One line of a defaults, frontend, backend or listen section, into its
/// settings or its servers.
fn setting(f: &File, sec: &mut Section, w: &[String], at: usize) -> Result<(), BadInput> {
    let first = &w[0];
    let st = &mut sec.settings;
    let bad = |why: String| BadInput::at(&f.name, at, why);
    match first.as_str() {
        "retries" => {
            let v = w
                .get(1)
                .and_then(|v| v.parse::<u32>().ok())
                .ok_or_else(|| {
                    bad(format!(
                        "`retries` takes a whole number, got `{}`",
                        w[1..].join(" ")
                    ))
                })?;
            st.retries = Some((v, at));
        }
        "retry-on" => {
            if w.len() < 2 {
                return Err(bad("`retry-on` needs at least one keyword".into()));
            }
            for k in &w[1..] {
                let status = k.parse::<u16>().ok().filter(|c| STATUSES.contains(c));
                if status.is_none() && !WORDS.contains(&k.as_str()) {
                    return Err(bad(format!(
                        "`retry-on`: unknown keyword `{k}` (HAProxy knows {} and the statuses {})",
                        WORDS.join(", "),
                        STATUSES.map(|c| c.to_string()).join(", ")
                    )));
                }
            }
            st.retry_on = Some((w[1..].to_vec(), at));
        }
        "option" | "no" => {
            let no = first == "no";
            let opt = if no {
                (w.get(1).map(String::as_str) == Some("option"))
                    .then(|| w.get(2))
                    .flatten()
            } else {
                w.get(1)
            };
            match opt.map(String::as_str) {
                Some("redispatch") => {
                    let every = if no {
                        None
                    } else {
                        match w.get(2) {
                            None => None,
                            Some(v) => Some(v.parse::<i64>().map_err(|_| {
                                bad(format!("`option redispatch` takes an interval, got `{v}`"))
                            })?),
                        }
                    };
                    st.redispatch = Some((!no, every, at));
                }
                Some("httpchk")
                | Some("tcp-check")
                | Some("ldap-check")
                | Some("mysql-check")
                | Some("pgsql-check")
                | Some("redis-check")
                | Some("smtpchk")
                | Some("ssl-hello-chk") => st.checks = (!no).then_some(at),
                _ => {}
            }
        }
        "http-check" => st.checks = st.checks.or(Some(at)),
        "timeout" => {
            let (Some(which), Some(v)) = (w.get(1), w.get(2)) else {
                return Err(bad(
                    "`timeout` needs what and how long (`timeout server 30s`)".into(),
                ));
            };
            let d = haproxy_time(v).ok_or_else(|| {
                bad(format!(
                    "`timeout {which}`: `{v}` is not a time (30s, 500ms, or milliseconds)"
                ))
            })?;
            match which.as_str() {
                "connect" => st.connect = Some((d, at)),
                "server" => st.server = Some((d, at)),
                _ => {}
            }
        }
        "balance" => {
            let Some(b) = w.get(1) else {
                return Err(bad("`balance` needs an algorithm".into()));
            };
            st.balance = Some((b.clone(), at));
        }
        "default-server" => {
            for p in &w[1..] {
                st.default_server.push((p.clone(), at));
            }
        }
        "server" => {
            let (Some(name), Some(addr)) = (w.get(1), w.get(2)) else {
                return Err(bad("`server` needs a name and an address".into()));
            };
            sec.servers.push(ServerLine {
                name: name.clone(),
                addr: addr.clone(),
                line: at,
                params: w[3..].to_vec(),
            });
        }
        _ => {}
    }
    Ok(())
}

/// `over` with `base` under it.
fn inherit(base: &Settings, over: &Settings) -> Settings {
    let mut default_server = base.default_server.clone();
    default_server.extend(over.default_server.iter().cloned());
    Settings {
        retries: over.retries.or(base.retries),
        retry_on: over.retry_on.clone().or_else(|| base.retry_on.clone()),
        redispatch: over.redispatch.or(base.redispatch),
        connect: over.connect.or(base.connect),
        server: over.server.or(base.server),
        balance: over.balance.clone().or_else(|| base.balance.clone()),
        default_server,
        checks: over.checks.or(base.checks),
    }
}

/// The lab's `retry_on` for HAProxy's keywords, and those with no word.
fn conditions(words: &[String]) -> (Vec<Value>, Vec<String>) {
    let has = |k: &str| words.iter().any(|w| w == k);
    if has("none") {
        return (vec![], vec![]);
    }
    let all = has("all-retryable-errors");
    let conn = all || has("conn-failure");
    let empty = all || has("empty-response");
    let rto = all || has("response-timeout");
    let mut on = vec![];
    let mut unmapped = vec![];
    if conn && empty && rto {
        on.push(s("reset"));
    } else {
        if conn {
            on.push(s("connect-failure"));
        }
        if rto {
            on.push(s("timeout"));
        }
        if empty {
            unmapped.push("empty-response".to_string());
        }
    }
    if all || has("junk-response") {
        unmapped.push("junk-response".into());
    }
    if all || has("0rtt-rejected") {
        unmapped.push("0rtt-rejected".into());
    }
    for code in STATUSES {
        let listed = has(&code.to_string());
        if listed || (all && matches!(code, 500 | 502 | 503 | 504)) {
            on.push(n(code));
        }
    }
    (on, unmapped)
}

/// Reads one haproxy.cfg.
pub fn read(f: &File, out: &mut Read) -> Result<(), BadInput> {
    let sections = parse(f)?;
    let mut notes: Vec<Note> = vec![];
    let proxies = proxies(f, &sections)?;
    let caller = whose_sidecar(f, &proxies, &mut notes)?;
    let mut first_backend: Option<usize> = None;
    for (sec, st) in proxies.iter().filter(|(s, _)| s.kind != "frontend") {
        first_backend = first_backend.or(Some(sec.line));
        out.rules
            .push(backend_rule(f, &caller, (sec, st), &mut notes)?);
    }
    match first_backend {
        Some(line) => {
            let mut sidecar = Mapping::new();
            sidecar.insert("kind".into(), s("haproxy"));
            let mut set = Mapping::new();
            set.insert("sidecar".into(), Value::Mapping(sidecar));
            out.services.push(ServiceRule {
                host: caller,
                set,
                source: Source::new(&f.name, line),
                what: "HAProxy: the sidecar carrying these calls".into(),
            });
        }
        None => note(
            f,
            &mut notes,
            1,
            format!("no backend or listen section: nothing set on {caller}'s calls"),
        ),
    }
    notes.sort();
    out.notes.extend(notes);
    Ok(())
}

/// A note on `f` at `line`.
fn note(f: &File, notes: &mut Vec<Note>, line: usize, text: String) {
    notes.push(Note {
        source: Source::new(&f.name, line),
        text,
    })
}

/// The frontends, backends and listen sections, each with the settings
/// in force in it: its own over the defaults section it names (`from`),
/// else over the last unnamed one before it.
fn proxies(f: &File, sections: &[Section]) -> Result<Vec<(Section, Settings)>, BadInput> {
    let mut named: Vec<(String, Settings)> = vec![];
    let mut last = Settings::default();
    let mut proxies: Vec<(Section, Settings)> = vec![];
    for sec in sections {
        let base = match &sec.from {
            Some(from) => named
                .iter()
                .rev()
                .find(|(n, _)| n == from)
                .map(|(_, s)| s.clone())
                .ok_or_else(|| {
                    BadInput::at(
                        &f.name,
                        sec.line,
                        format!(
                            "{} {}: `from {from}`: no defaults section of that name before it",
                            sec.kind, sec.name
                        ),
                    )
                })?,
            None if sec.kind == "defaults" => Settings::default(),
            None => last.clone(),
        };
        let eff = inherit(&base, &sec.settings);
        match sec.kind.as_str() {
            "defaults" => {
                if !sec.name.is_empty() {
                    named.push((sec.name.clone(), eff.clone()));
                }
                last = eff;
            }
            "frontend" | "backend" | "listen" => proxies.push((sec.clone(), eff)),
            _ => {}
        }
    }
    Ok(proxies)
}

/// Whose sidecar this HAProxy is: the `# chaoslab: service NAME` comment,
/// else the file's name, else its frontend's name.
fn whose_sidecar(
    f: &File,
    proxies: &[(Section, Settings)],
    notes: &mut Vec<Note>,
) -> Result<String, BadInput> {
    Ok(match service_comment(&f.text) {
        Some((name, _)) => name,
        None => {
            let front = proxies.iter().find(|(s, _)| s.kind == "frontend");
            let (name, line, from) = if let Some(stem) = file_stem(&f.name, &["haproxy", "default"])
            {
                (stem, 1, "the file's name".to_string())
            } else if let Some((s, _)) = front {
                (s.name.clone(), s.line, "its frontend's name".to_string())
            } else {
                return Err(BadInput::at(
                    &f.name,
                    1,
                    "cannot tell whose sidecar this HAProxy is: write `# chaoslab: service NAME` in the file",
                ));
            };
            note(f, notes, line, format!("this HAProxy is taken to be the sidecar of {name}, from {from} (write `# chaoslab: service NAME` to say so)"));
            name
        }
    })
}

/// The rule a backend (or listen section) sets on the caller's calls to
/// its servers: the attempts its `retries` and `retry-on` give, the
/// conditions, redispatch, the per-try timeout, the balancer; a note for
/// each directive the lab does not map.
fn backend_rule(
    f: &File,
    caller: &str,
    (sec, st): (&Section, &Settings),
    notes: &mut Vec<Note>,
) -> Result<Rule, BadInput> {
    let what_sec = format!("HAProxy {} {}", sec.kind, sec.name);
    let addrs: Vec<&str> = sec.servers.iter().map(|x| x.addr.as_str()).collect();
    let host = callee(&sec.name, &addrs);
    let (words, on_line) = match &st.retry_on {
        Some((w, l)) => (w.clone(), Some(*l)),
        None => (vec!["conn-failure".to_string()], None),
    };
    let (on, unmapped) = conditions(&words);
    for u in unmapped {
        note(f, notes, on_line.unwrap_or(sec.line), format!("{what_sec}: retry-on `{u}`: not mapped (the lab's callees never answer so: nothing to retry)"));
    }
    let none = words.iter().any(|w| w == "none");
    let retries = st.retries.map_or(3, |(r, _)| r);
    let attempts = if none { 1 } else { retries + 1 };
    let (redispatch, every) = st.redispatch.map_or((false, None), |(on, e, _)| (on, e));
    let mut pol = policy([
        ("preset", s("retry")),
        ("attempts", n(attempts)),
        ("retry_on", Value::Sequence(on)),
        ("retry_other_host", Value::Bool(redispatch)),
        ("backoff", s("0ms")),
    ]);
    if let (true, Some(e), Some((_, _, l))) = (redispatch, every, st.redispatch) {
        if e != 1 && e != -1 {
            note(f, notes, l, format!("{what_sec}: `option redispatch {e}`: not mapped (the lab sends every retry to another server, as HAProxy 2.6 was measured to)"));
        }
    }
    if let Some((t, _)) = st.server {
        pol.insert("timeout".into(), lab_time(t));
        if let Some((c, l)) = st.connect {
            if c != t {
                note(f, notes, l, format!("{what_sec}: `timeout connect` {}: not mapped (the lab has one per-try timeout; `timeout server` is taken)", lab_time(c).as_str().unwrap_or_default()));
            }
        }
    } else if let Some((c, l)) = st.connect {
        note(f, notes, l, format!("{what_sec}: `timeout connect` {}: not mapped (without `timeout server` the lab's per-try timeout stands)", lab_time(c).as_str().unwrap_or_default()));
    }
    if let Some((b, l)) = &st.balance {
        match b.as_str() {
            "roundrobin" | "static-rr" => {
                pol.insert("lb".into(), s("round-robin"));
            }
            "random" | "random(1)" => {
                pol.insert("lb".into(), s("random"));
            }
            "random(2)" => {
                pol.insert("lb".into(), s("p2c"));
            }
            other => note(f, notes, *l, format!("{what_sec}: `balance {other}`: not mapped (the lab balances round-robin, random or p2c)")),
        }
    }
    servers(f, &what_sec, sec, st, notes)?;
    let source = st.retries.map(|(_, l)| l).or(on_line).unwrap_or(sec.line);
    let what = format!(
        "{what_sec}: {}, retry-on {}{}",
        match st.retries {
            Some((r, _)) => format!("retries {r}"),
            None => "retries 3 (HAProxy's default)".into(),
        },
        words.join(" "),
        if redispatch {
            ", option redispatch"
        } else {
            ""
        }
    );
    Ok(Rule {
        host,
        from: Some(caller.to_string()),
        policy: pol,
        source: Source::new(&f.name, source),
        what,
    })
}

/// A backend's servers: a note for its health checks, backups, disabled
/// servers and unequal weights, none of which the lab maps.
fn servers(
    f: &File,
    what_sec: &str,
    sec: &Section,
    st: &Settings,
    notes: &mut Vec<Note>,
) -> Result<(), BadInput> {
    let mut checks: Vec<String> = vec![];
    let mut check_line = None;
    for (p, l) in &st.default_server {
        let key = p.as_str();
        if CHECKS.contains(&key) && !checks.contains(&p.to_string()) {
            checks.push(p.clone());
            check_line = check_line.or(Some(*l));
        }
    }
    let mut weights = vec![];
    for srv in &sec.servers {
        let mut weight = 1u32;
        let mut it = srv.params.iter();
        while let Some(p) = it.next() {
            match p.as_str() {
                "backup" => note(f, notes, srv.line, format!("{what_sec}: server {} `backup`: not mapped (HAProxy sends to it only when every primary is down by its health checks; the lab has one pool of replicas)", srv.name)),
                "disabled" => note(f, notes, srv.line, format!("{what_sec}: server {} `disabled`: not mapped (the lab's callee is the graph's replicas)", srv.name)),
                "weight" => {
                    let v = it.next().and_then(|v| v.parse::<u32>().ok()).ok_or_else(|| {
                        BadInput::at(&f.name, srv.line, format!("{what_sec}: server {}: `weight` takes a number", srv.name))
                    })?;
                    weight = v;
                }
                k if CHECKS.contains(&k) => {
                    let shown = match k {
                        "check" | "agent-check" => k.to_string(),
                        _ => format!("{k} {}", it.next().map(String::as_str).unwrap_or_default()),
                    };
                    if !checks.contains(&shown) {
                        checks.push(shown);
                    }
                    check_line = check_line.or(Some(srv.line));
                }
                _ => {}
            }
        }
        weights.push(weight);
    }
    if let Some(l) = st.checks {
        if checks.is_empty() {
            checks.push("option httpchk".into());
        }
        check_line = check_line.or(Some(l));
    }
    if let Some(l) = check_line {
        note(f, notes, l, format!("{what_sec}: health checks ({}): not mapped (the lab gives HAProxy no health checks; its retries go as the policy says)", checks.join(", ")));
    }
    if weights.iter().any(|w| *w != weights[0]) {
        note(
            f,
            notes,
            sec.line,
            format!(
                "{what_sec}: weights {}: not mapped (the lab's replicas share calls equally)",
                weights
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        );
    }
    Ok(())
}
