//! The values of the flags: the parsers clap calls, and the lookups a
//! flag's value needs a topology for (`--fail D=0.3`, `--service C`).

use std::time::Duration;

use super::{service_names, UsageError};
use crate::lab::Action;
use crate::theme::Theme;
use crate::topology::{Preset, ServiceId, Topology};

/// The service `--service` names.
pub fn service_named(t: &Topology, name: &str) -> Result<ServiceId, UsageError> {
    t.service_id(name.trim()).ok_or_else(|| {
        UsageError(format!(
            "--service {name}: there is no service `{name}` in topology {} (services: {})",
            t.name,
            service_names(t)
        ))
    })
}

/// The fault actions of `--fail SERVICE[=RATE]` flags.
pub fn fail_actions(t: &Topology, fails: &[String]) -> Result<Vec<Action>, UsageError> {
    fails
        .iter()
        .map(|f| {
            let (id, rate) = parse_fail(t, f)?;
            let mut fault = t.services[id].fault.clone();
            fault.error_rate = rate;
            fault.down = false;
            // `--fail S/E` is on that endpoint; `--fail S` on all of S's.
            fault.endpoint = t.endpoint_named(id, f.split('=').next().unwrap_or_default());
            Ok(Action::SetFault { service: id, fault })
        })
        .collect()
}

/// Parses `SERVICE` or `SERVICE=RATE` against a topology.
pub fn parse_fail(t: &Topology, spec: &str) -> Result<(usize, f64), UsageError> {
    let (name, rate) = match spec.split_once('=') {
        Some((n, r)) => {
            let rate: f64 = r.trim().parse().map_err(|_| {
                UsageError(format!(
                    "--fail {spec}: `{r}` is not a rate (write e.g. {n}=0.3)"
                ))
            })?;
            (n.trim(), rate)
        }
        None => (spec.trim(), 1.0),
    };
    if !(0.0..=1.0).contains(&rate) {
        return Err(UsageError(format!(
            "--fail {spec}: the rate must be between 0 and 1"
        )));
    }
    let id = t.service_id(name).ok_or_else(|| {
        UsageError(format!(
            "--fail {spec}: there is no service `{name}` in topology {} (services: {})",
            t.name,
            super::peers::names(t)
        ))
    })?;
    Ok((id, rate))
}

/// Parses a preset name.
pub fn parse_policy(s: &str) -> Result<Preset, UsageError> {
    crate::topology::spec::parse_preset(s.trim())
        .map_err(|e| UsageError(format!("--policy {s}: {e}")))
}

/// Parses an attribution mode.
pub fn parse_attribution(s: &str) -> Result<error_ownership::Attribution, String> {
    use error_ownership::Attribution;
    [
        Attribution::Simple,
        Attribution::Declared,
        Attribution::Learned,
    ]
    .into_iter()
    .find(|a| a.name() == s)
    .ok_or_else(|| format!("`{s}` is not an attribution mode (simple, declared, learned)"))
}

/// Parses a dashboard theme: `dark` or `light`.
pub fn parse_theme(s: &str) -> Result<Theme, String> {
    Theme::ALL
        .into_iter()
        .find(|t| t.name() == s)
        .ok_or_else(|| format!("`{s}` is not a theme (dark, light)"))
}

/// Parses `on`/`off` (also `true`/`false`).
pub fn parse_on_off(s: &str) -> Result<bool, String> {
    match s {
        "on" | "true" => Ok(true),
        "off" | "false" => Ok(false),
        _ => Err(format!("`{s}` is neither on nor off")),
    }
}

/// Parses `250ms`, `10s`, `1m`, `1h`, `1.5s`, or a bare number of seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    crate::topology::spec::parse_duration(s)
}

/// How long a run lasts: a duration above zero (a run of nothing
/// measures nothing).
pub fn parse_run_duration(s: &str) -> Result<Duration, String> {
    let d = parse_duration(s)?;
    if d.is_zero() {
        return Err(format!(
            "`{s}` is no time at all: a run must last more than 0s (e.g. 20s)"
        ));
    }
    Ok(d)
}

/// Parses an entry rate as the scenario loader reads `rps:`: a positive,
/// finite number of requests per second, at most
/// [`crate::yaml::MAX_RPS`]. Negative numbers are taken (and refused
/// with the reason), not mistaken for flags.
pub fn parse_rps(s: &str) -> Result<f64, String> {
    let v: f64 = s.trim().parse().map_err(|_| {
        format!("rps must be a positive, finite number of requests per second, got `{s}`")
    })?;
    crate::yaml::entry_rate(v, "rps")
}

/// Parses a seed: a whole number from 0 to 2^64 − 1.
pub fn parse_seed(s: &str) -> Result<u64, String> {
    s.trim()
        .parse()
        .map_err(|_| format!("a seed is a whole number from 0 to {}, got `{s}`", u64::MAX))
}

/// Parses the dashboard's frames per second: a whole number from 1 to 60.
pub fn parse_fps(s: &str) -> Result<u32, String> {
    match s.trim().parse::<u32>() {
        Ok(n) if (1..=60).contains(&n) => Ok(n),
        _ => Err(format!(
            "fps must be a whole number of frames per second from 1 to 60, got `{s}`"
        )),
    }
}

/// Parses the tour's chapters: `N` (from chapter N to the last) or `N-M`
/// (chapters N to M), numbered from 1.
pub fn parse_chapter(s: &str) -> Result<(usize, Option<usize>), String> {
    let number = |x: &str| x.trim().parse::<usize>().ok().filter(|&n| n >= 1);
    let parsed = match s.split_once('-') {
        None => number(s).map(|n| (n, None)),
        Some((a, b)) => match (number(a), number(b)) {
            (Some(a), Some(b)) if a <= b => Some((a, Some(b))),
            _ => None,
        },
    };
    parsed.ok_or_else(|| {
        format!(
            "chapters are numbered from 1, as `3` (from the third on) or `2-5`, got `{s}` (chaoslab tour --list)"
        )
    })
}

/// A value's name on the command line, as clap spells it.
pub fn value_name<T: clap::ValueEnum>(v: &T) -> String {
    v.to_possible_value()
        .map(|p| p.get_name().to_string())
        .unwrap_or_default()
}

/// `K/N`: shard K (from 0) of N (1 to 1024).
pub fn parse_shard(s: &str) -> Result<(u16, u16), String> {
    let bad =
        || format!("`{s}`: give the shard as K/N, K from 0 to N-1 and N from 1 to 1024 (`2/8`)");
    let (k, n) = s.split_once('/').ok_or_else(bad)?;
    let (k, n): (u16, u16) = (
        k.trim().parse().map_err(|_| bad())?,
        n.trim().parse().map_err(|_| bad())?,
    );
    if n == 0 || n > 1024 || k >= n {
        return Err(bad());
    }
    Ok((k, n))
}
