//! Where the other services live when each runs in a process of its own
//! (`chaoslab node`, `chaoslab load`): `--peer NAME=URL` for one service,
//! `--peers TEMPLATE` for every service without one, `{name}` replaced
//! by the service's name as the topology spells it
//! (`http://{name}:8080/`, so a Kubernetes Service named after each
//! service is found by its DNS name).

use clap::Args;

use super::UsageError;
use crate::topology::spec::check_http_url;
use crate::topology::{ServiceId, Topology};

/// `--peer` and `--peers`.
#[derive(Debug, Args, Default, Clone)]
pub struct PeerArgs {
    /// Where a service this process calls lives: `NAME=URL`
    /// (`B=http://10.0.0.7:8080/`); repeat it for each.
    #[arg(long = "peer", value_name = "NAME=URL")]
    pub peer: Vec<String>,
    /// Where every service without a `--peer` lives: a URL with `{name}`
    /// replaced by the service's name (`http://{name}:8080/`).
    #[arg(long, value_name = "TEMPLATE")]
    pub peers: Option<String>,
}

/// The flags read against a topology: a URL per service where one is
/// known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Peers {
    given: Vec<Option<String>>,
    /// Given by a service's name, for all its endpoints.
    whole: Vec<bool>,
    template: Option<String>,
    /// The flags they came from, for messages: one service, every one.
    flags: (&'static str, &'static str),
}

impl PeerArgs {
    /// Reads the flags against `t`: each `--peer` names a service of the
    /// topology, once, with a plain `http://` URL; the template holds
    /// `{name}`.
    pub fn read(&self, t: &Topology) -> Result<Peers, UsageError> {
        read_peers(&self.peer, self.peers.as_deref(), t)
    }
}

/// `--peer NAME=URL` (`one`, each) and `--peers TEMPLATE` (`all`) read
/// against `t`.
pub fn read_peers(one: &[String], all: Option<&str>, t: &Topology) -> Result<Peers, UsageError> {
    read_as(one, all, ("--peer", "--peers"), t)
}

/// `--remote NAME=URL` (repeatable) or `--remote TEMPLATE`: where each
/// node's control API answers, read as `--peer` and `--peers` are.
pub fn read_remote(specs: &[String], t: &Topology) -> Result<Peers, UsageError> {
    let (templates, one): (Vec<&String>, Vec<&String>) =
        specs.iter().partition(|s| s.contains("{name}"));
    if templates.len() > 1 {
        return Err(UsageError(format!(
            "--remote {}: give one template with {{name}}, and --remote NAME=URL for the services it does not fit",
            templates[1]
        )));
    }
    let one: Vec<String> = one.into_iter().cloned().collect();
    read_as(
        &one,
        templates.first().map(|s| s.as_str()),
        ("--remote", "--remote"),
        t,
    )
}

/// The flags `one` (`NAME=URL`, each) and `all` (a template) read against
/// `t`; messages name them as `flags` says.
fn read_as(
    one: &[String],
    all: Option<&str>,
    flags: (&'static str, &'static str),
    t: &Topology,
) -> Result<Peers, UsageError> {
    let (one_flag, all_flag) = flags;
    let mut given = vec![None; t.services.len()];
    let mut whole = vec![false; t.services.len()];
    for spec in one {
        let Some((name, url)) = spec.split_once('=') else {
            return Err(UsageError(format!(
                "{one_flag} {spec}: write NAME=URL, e.g. {one_flag} {}=http://127.0.0.1:8080/",
                t.services.last().map_or("B", |s| s.name.as_str())
            )));
        };
        let name = name.trim();
        let id = t.service_id(name).ok_or_else(|| {
            UsageError(format!(
                "{one_flag} {spec}: there is no service `{name}` in topology {} (services: {})",
                t.name,
                names(t)
            ))
        })?;
        // A replicated service's replicas: their URLs, comma-separated.
        let url = url
            .split(',')
            .map(|u| check_http_url(u.trim()))
            .collect::<Result<Vec<String>, String>>()
            .map_err(|e| UsageError(format!("{one_flag} {spec}: {e}")))?
            .join(",");
        if given[id].is_some() {
            return Err(UsageError(format!(
                "{one_flag} {spec}: `{name}` is given twice; give each service one {one_flag}"
            )));
        }
        given[id] = Some(url);
        whole[id] = t.services[id].name != name;
    }
    let template = match all {
        Some(tpl) if !tpl.contains("{name}") => {
            return Err(UsageError(format!(
                "{all_flag} {tpl}: the template has no {{name}} to put each service's name in (e.g. --peers 'http://{{name}}:8080/')"
            )))
        }
        Some(tpl) => {
            check_http_url(&tpl.replace("{name}", "x"))
                .map_err(|e| UsageError(format!("{all_flag} {tpl}: {e}")))?;
            Some(tpl.trim().to_string())
        }
        None => None,
    };
    Ok(Peers {
        given,
        whole,
        template,
        flags,
    })
}

impl Peers {
    /// Where each root the load goes to lives (per service, topology
    /// order; `None` for every other service and for an outside root).
    pub fn roots(&self, t: &Topology) -> Result<Vec<Option<String>>, UsageError> {
        let mut placed = vec![None; t.services.len()];
        for root in &t.load.roots {
            let s = &t.services[root.entry];
            if s.url.is_none() {
                let what = if t.load.many_roots() { "root" } else { "entry" };
                let why = format!("the load goes to the {what} `{}`", s.name);
                placed[root.entry] = Some(self.url(t, root.entry, &why)?);
            }
        }
        Ok(placed)
    }

    /// Where service `id` lives: its `--peer`, else `--peers` filled in
    /// with its name (a name the URL cannot carry is an error), else an
    /// error that says which flag to give; `why` says who needs it.
    ///
    /// An endpoint `S/E` lives where its service does, at path `/E`.
    pub fn url(&self, t: &Topology, id: ServiceId, why: &str) -> Result<String, UsageError> {
        let s = &t.services[id];
        // Given for this node by its own name (`S/E=URL`, or a service
        // without endpoints): as given.
        if let (Some(u), true) = (&self.given[id], s.endpoint.is_none() || !self.whole[id]) {
            return Ok(u.clone());
        }
        let at_path = |base: String| crate::topology::at_path(&base, s.endpoint.as_deref());
        if let (Some(u), true) = (
            self.given.get(s.group).cloned().flatten(),
            self.whole[s.group],
        ) {
            return Ok(at_path(u));
        }
        let name = s.service_name();
        let (one, all) = self.flags;
        match &self.template {
            Some(tpl) => check_http_url(&tpl.replace("{name}", name))
                .map(at_path)
                .map_err(|e| UsageError(format!("{all} {tpl} for service `{name}`: {e}"))),
            None => Err(UsageError(format!(
                "{why}, but nothing says where `{name}` runs: give {one} {name}=http://HOST:PORT/ (or {all} 'http://{{name}}:PORT/' for every service)"
            ))),
        }
    }

    /// The URL of every service `id` calls that runs in a process of its
    /// own (an outside service keeps its `url:`), topology order; `None`
    /// for the others. Fails on the first callee nothing places.
    pub fn callees_of(
        &self,
        t: &Topology,
        id: ServiceId,
    ) -> Result<Vec<Option<String>>, UsageError> {
        let mut urls = vec![None; t.services.len()];
        // A service with endpoints: the calls of every one of them.
        for node in t.group(id) {
            let s = &t.services[node];
            for &e in &s.calls {
                let to = t.edges[e].to;
                if t.services[to].url.is_none()
                    && urls[to].is_none()
                    && t.services[to].group != t.services[id].group
                {
                    let why = format!("service `{}` calls `{}`", s.name, t.services[to].name);
                    urls[to] = Some(self.url(t, to, &why)?);
                }
            }
        }
        Ok(urls)
    }
}

/// The topology's service names, for a message.
pub fn names(t: &Topology) -> String {
    t.services
        .iter()
        .map(|s| s.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chain() -> Topology {
        Topology::from_yaml(
            "name: t\nservices:\n  A: { calls: [B] }\n  B: { calls: [C, X] }\n  C: {}\n  X: { url: \"http://10.0.0.1:80/\" }\n",
            "t.yaml",
        )
        .unwrap()
    }

    fn args(peer: &[&str], peers: Option<&str>) -> PeerArgs {
        PeerArgs {
            peer: peer.iter().map(|s| s.to_string()).collect(),
            peers: peers.map(str::to_string),
        }
    }

    #[test]
    fn a_peer_wins_over_the_template_and_outside_services_keep_their_url() {
        let t = chain();
        let p = args(&["C=http://c.local:81/"], Some("http://{name}:8080/"))
            .read(&t)
            .unwrap();
        let urls = p.callees_of(&t, 1).unwrap();
        assert_eq!(urls[2].as_deref(), Some("http://c.local:81/"));
        assert_eq!(urls[3], None, "X has its url");
        assert_eq!(urls[0], None, "B does not call A");
        let p = args(&[], Some("http://{name}:8080/")).read(&t).unwrap();
        assert_eq!(p.url(&t, 0, "").unwrap(), "http://A:8080/");
    }

    #[test]
    fn a_callee_nowhere_names_itself_and_the_flag() {
        let t = chain();
        let p = args(&[], None).read(&t).unwrap();
        let e = p.callees_of(&t, 1).unwrap_err().0;
        assert!(e.contains("`B` calls `C`"), "{e}");
        assert!(e.contains("--peer C=http://"), "{e}");
        assert!(e.contains("--peers"), "{e}");
        // A leaf calls nothing: it needs no peer.
        assert!(p.callees_of(&t, 2).unwrap().iter().all(Option::is_none));
    }

    #[test]
    fn bad_flags_say_what_and_where() {
        let t = chain();
        let err = |peer: &[&str], peers| args(peer, peers).read(&t).unwrap_err().0;
        assert!(err(&["C"], None).contains("write NAME=URL"));
        let e = err(&["Q=http://q/"], None);
        assert!(
            e.contains("no service `Q`") && e.contains("A, B, C, X"),
            "{e}"
        );
        assert!(err(&["C=ftp://c/"], None).contains("must start with http://"));
        assert!(err(&["C=http://a/", "C=http://b/"], None).contains("given twice"));
        // A replicated service's replicas, comma-separated.
        let p = args(&["C=http://a:1/, http://b:2/"], None)
            .read(&t)
            .unwrap();
        assert_eq!(p.url(&t, 2, "").unwrap(), "http://a:1/,http://b:2/");
        assert!(err(&["C=http://a/,"], None).contains("http://"));
        assert!(err(&[], Some("http://svc:80/")).contains("no {name}"));
        assert!(err(&[], Some("https://{name}/")).contains("http://"));
    }
}
