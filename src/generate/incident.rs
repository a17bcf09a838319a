//! `chaoslab generate --like uber-incident` (SPEC section 14): Uber's
//! incident of 18 November 2025 on a mesh of thousands.
//!
//! A Core Entity service more than five levels deep fails at a very high
//! error rate; under retry budgets alone it would have received 46% to
//! 135% more traffic, because four to nine hops above it retried (1.1^4 =
//! 1.46 to 1.1^9 = 2.36). The generated topology grafts that shape onto a
//! mesh drawn like Meta's ([`super::draw`]):
//!
//! - `core-entity`, a leaf with one endpoint per retrying depth
//!   (`core-entity/d4` … `core-entity/d9`), so the load each group of
//!   paths brings is a row of its own, measured and modelled;
//! - for each depth d, [`CHAINS`] user-facing APIs `api-dD-cK`, each
//!   calling a front `bff-dD-cK` and then a chain of d services
//!   `hop-dD-cK-1` … `hop-dD-cK-d`, the last an immediate caller of
//!   `core-entity/dD`. The API's and the front's calls are not retried;
//!   every call from the first hop down is, so d hops retry and the Core
//!   Entity sits d + 2 levels deep (six to eleven);
//! - on the drawn mesh around it, a stated share of services that run no
//!   middleware, of services that drop their request context, and of calls
//!   that are never retried, drawn from the seed. The incident's paths keep
//!   all three clean, so their figures are the mechanism's alone; the
//!   mesh's are what makes the static radius larger than 1 under
//!   ownership.

use std::fmt::Write as _;

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

use super::like::Like;
use crate::error::RunError;

use super::{draw, like, Extra, Options};

/// The retrying depths of the incident's paths: the post's four to nine.
pub const DEPTHS: std::ops::RangeInclusive<usize> = 4..=9;
/// Paths (user-facing APIs, immediate callers) per retrying depth.
pub const CHAINS: usize = 2;
/// Root requests per second into each of the incident's APIs.
pub const PATH_RPS: f64 = 20.0;
/// The drawn mesh's share of services without the ownership middleware.
pub const NO_MIDDLEWARE: f64 = 0.02;
/// The drawn mesh's share of calling services that drop their context.
pub const DROPPED_CONTEXT: f64 = 0.01;
/// The drawn mesh's share of calls never retried.
pub const NO_RETRY: f64 = 0.3;
/// The drawn mesh's root requests per second in all (`--rps` overrides).
pub const MESH_RPS: f64 = 20.0;

/// Services the incident's paths add: the Core Entity and, per path, an
/// API, a front and its retrying hops.
pub fn incident_services() -> usize {
    1 + DEPTHS.map(|d| CHAINS * (2 + d)).sum::<usize>()
}

/// The fewest services `--like uber-incident` takes: the incident's paths
/// and a drawn mesh of 100 around them.
pub fn fewest_services() -> usize {
    incident_services() + 100
}

/// The topology's text (not yet checked).
pub fn write(args: &Options) -> Result<String, RunError> {
    let n = args.services as usize;
    if n < fewest_services() {
        return Err(RunError::Usage(format!(
            "--like uber-incident needs at least {} services (the incident's paths take {}, and a mesh of 100 around them); got {n}",
            fewest_services(),
            incident_services()
        )));
    }
    let params = like::params(Like::UberIncident);
    let mut mesh = draw::mesh(n - incident_services(), &params, args.seed);
    let mut rng = StdRng::seed_from_u64(args.seed ^ 0x0005_EED0_F1C1_DE47);
    let (mut no_mw, mut dropped, mut calls, mut no_retry) = (0, 0, 0, 0);
    for s in &mut mesh.services {
        if rng.random::<f64>() < NO_MIDDLEWARE {
            s.ownership = false;
            no_mw += 1;
        }
        let calling = s.endpoints.iter().any(|e| !e.is_empty());
        if calling && rng.random::<f64>() < DROPPED_CONTEXT {
            s.context_dropped = true;
            dropped += 1;
        }
        for c in s.endpoints.iter_mut().flatten() {
            calls += 1;
            if rng.random::<f64>() < NO_RETRY {
                c.retries = false;
                no_retry += 1;
            }
        }
    }
    let rps = if args.rps == 100.0 {
        MESH_RPS
    } else {
        args.rps
    };
    let mut extra = Extra {
        name: Some((
            "uber-incident".into(),
            format!(
                "Uber's incident of 18 November 2025 on {n} services (seed {}): core-entity, more than five levels deep, fails; four to nine hops above it retry.",
                args.seed
            ),
        )),
        policy: Some(
            "# The post's setting: two attempts per hop and a 10% retry budget (a scenario\n\
             # switches to ownership).\n\
             policy: { preset: budget, attempts: 2, budget: 0.1 }"
                .into(),
        ),
        rps: Some(rps),
        ..Extra::default()
    };
    let h = &mut extra.header;
    h.push("Uber's incident (SPEC section 14), grafted onto the mesh above:".into());
    h.push(
        "  core-entity, a leaf with one endpoint per retrying depth (d4 .. d9), fails in the"
            .into(),
    );
    h.push(format!(
        "  scenario; for each depth d, {CHAINS} user-facing APIs api-dD-cK at {PATH_RPS} rps each call"
    ));
    h.push(
        "  a front bff-dD-cK, then a chain of d services hop-dD-cK-1 .. hop-dD-cK-d, the last"
            .into(),
    );
    h.push(format!(
        "  an immediate caller of core-entity/dD ({} immediate callers in all). The API's and",
        CHAINS * DEPTHS.count()
    ));
    h.push(
        "  the front's calls are not retried (attempts 1); every call below is, so d hops".into(),
    );
    h.push("  retry and core-entity sits d + 2 levels deep (six to eleven).".into());
    h.push(
        "  Under the 10% budget each endpoint dD gets 1.1^d of its baseline (1.46 .. 2.36,".into(),
    );
    h.push(
        "  the post's 46% to 135% more traffic); under ownership 1.1 (its immediate callers".into(),
    );
    h.push(
        "  alone retry), and the retries the hops above them would have sent are suppressed."
            .into(),
    );
    h.push(format!(
        "Assumed by the lab on the drawn mesh (Uber gives no shares): {:.0}% of services run no",
        NO_MIDDLEWARE * 100.0
    ));
    h.push(format!(
        "  middleware ({no_mw} here), {:.0}% of calling services drop their context ({dropped}), {:.0}% of",
        DROPPED_CONTEXT * 100.0,
        NO_RETRY * 100.0
    ));
    h.push(format!(
        "  calls are never retried ({no_retry} of {calls}); the drawn mesh's roots share {rps} rps. The"
    ));
    h.push(
        "  incident's paths have none of the three, so their figures are the mechanism's.".into(),
    );
    let mut services = String::new();
    for d in DEPTHS {
        for c in 0..CHAINS {
            let api = format!("api-d{d}-c{c}");
            let bff = format!("bff-d{d}-c{c}");
            extra
                .roots
                .push(format!("- {{ entry: {api}, rps: {PATH_RPS} }}"));
            let _ = writeln!(
                services,
                "  {api}: {{ calls: [{{ to: {bff}, policy: {{ attempts: 1 }} }}] }}"
            );
            let _ = writeln!(
                services,
                "  {bff}: {{ calls: [{{ to: hop-d{d}-c{c}-1, policy: {{ attempts: 1 }} }}] }}"
            );
            for k in 1..=d {
                let next = if k == d {
                    format!("core-entity/d{d}")
                } else {
                    format!("hop-d{d}-c{c}-{}", k + 1)
                };
                let _ = writeln!(services, "  hop-d{d}-c{c}-{k}: {{ calls: [{next}] }}");
            }
        }
    }
    services.push_str("  core-entity:\n    endpoints:\n");
    for d in DEPTHS {
        let _ = writeln!(services, "      d{d}: {{}}");
    }
    extra.services = services;
    Ok(super::write(&mesh, args, &params, &extra))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::Topology;

    fn args(services: u32, seed: u64) -> Options {
        Options {
            services,
            like: Like::UberIncident,
            seed,
            rps: 100.0,
            output: None,
        }
    }

    #[test]
    fn the_incident_paths_retry_four_to_nine_hops_above_a_deep_core_entity() {
        let y = super::super::generate(&args(600, 3)).unwrap();
        let t = Topology::from_yaml(&y, "u.yaml").unwrap();
        assert_eq!(
            t.services
                .iter()
                .enumerate()
                .filter(|(i, s)| s.group == *i)
                .count(),
            600
        );
        for d in DEPTHS {
            let name = format!("core-entity/d{d}");
            let core = t.services.iter().position(|s| s.name == name).unwrap();
            assert_eq!(t.services[core].depth, d + 2, "d{d}");
            // Five immediate callers, each at the end of d retrying hops.
            let callers: Vec<_> = t.edges.iter().filter(|e| e.to == core).collect();
            assert_eq!(callers.len(), CHAINS);
        }
        assert_eq!(t.load.roots.len() - DEPTHS.count() * CHAINS, {
            t.load
                .roots
                .iter()
                .filter(|r| t.services[r.entry].name.starts_with("entry-"))
                .count()
        });
        assert!(
            y.contains("ownership: false"),
            "no service without middleware"
        );
        assert!(y.contains("policy: { attempts: 1 }"));
        assert_eq!(y, super::super::generate(&args(600, 3)).unwrap());
    }

    #[test]
    fn too_few_services_is_refused_with_the_least() {
        let least = fewest_services();
        let e = super::super::generate(&args(least as u32 - 1, 1))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&format!("needs at least {least} services")),
            "{e}"
        );
        assert!(super::super::generate(&args(least as u32, 1)).is_ok());
    }
}
