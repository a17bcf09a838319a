//! nginx's round robin over an upstream with its passive health check,
//! played second by second: how many attempts an upstream whose servers
//! each fail every attempt or none takes in its steady state, and how its
//! calls end. The model's answer for an edge through an nginx sidecar with
//! `max_fails` ≥ 1 (SPEC section 17).
//!
//! Why play it rather than write a formula: what nginx sends depends on
//! rules that interact. A server is out once `fails >= max_fails`, until
//! `now - checked > fail_timeout` (nginx's clock in whole seconds); it is
//! tried again then (`checked = now`), and a failed try that is not the
//! call's last puts it straight back out, while a call's last try, whose
//! answer nginx passes on even when it is a 500, counts as a success and
//! clears `fails` (`accessed < checked`): that server takes `max_fails`
//! more attempts before it is out again. Over two servers failing
//! everything with two tries a call, that is `max_fails` + 2 attempts per
//! `fail_timeout` + 1 s, which the lab measured exactly (`max_fails` 1, 2
//! and 3 at 100 calls a second for 30 s: 30, 40 and 50 attempts with
//! `fail_timeout: 2s`).
//!
//! The rules are `ngx_http_upstream_get_peer` and
//! `ngx_http_upstream_free_round_robin_peer` of nginx 1.22
//! (`src/http/ngx_http_upstream_round_robin.c`): smooth weighted round
//! robin over the servers not tried by the call and not out, every weight
//! 1, a failure taking `weight / max_fails` off a server's effective
//! weight (integer division). Calls are taken one after another.

/// One server's state as nginx keeps it.
#[derive(Debug, Clone, Copy, Default)]
struct Peer {
    fails: u32,
    accessed: i64,
    checked: i64,
    effective: i64,
    current: i64,
}

/// How calls through nginx end in the steady state, per call.
#[derive(Debug, Clone, PartialEq)]
pub struct Steady {
    /// Attempts per call.
    pub attempts: f64,
    /// Calls that made at least one attempt.
    pub sent: f64,
    /// Calls answered with a success.
    pub ok: f64,
    /// Calls answered with a failing server's error (its last try's).
    pub error: f64,
    /// Calls nginx answered 502 itself: no server left to try.
    pub no_live: f64,
}

/// Plays `calls_per_sec` calls a second, `tries` tries each at most,
/// through an upstream whose servers fail every attempt (`bad[i]`) or
/// none, each out after `max_fails` failures for `fail_timeout_s` whole
/// seconds: the steady state, per call, over the last half of twenty
/// periods.
pub fn steady(
    bad: &[bool],
    max_fails: u32,
    fail_timeout_s: u64,
    tries: u32,
    calls_per_sec: f64,
) -> Steady {
    let n = bad.len();
    let ft = fail_timeout_s as i64;
    let mut peers = vec![
        Peer {
            effective: 1,
            ..Peer::default()
        };
        n
    ];
    let seconds = 20 * (ft + 1).max(1) + 10;
    let measured_from = seconds / 2;
    let (mut calls, mut attempts, mut sent, mut ok, mut error, mut no_live) =
        (0.0f64, 0.0, 0.0, 0.0, 0.0, 0.0);
    let mut carried = 0.0f64;
    let out = |p: &Peer, now: i64| max_fails > 0 && p.fails >= max_fails && now - p.checked <= ft;
    for now in 1..=seconds {
        carried += calls_per_sec.max(0.0);
        let this_second = carried.floor();
        carried -= this_second;
        let count = now >= measured_from;
        let mut left = this_second;
        while left > 0.0 {
            // Once no failing server can be picked this second, the rest
            // of its calls all go alike: to a good server, or to none.
            if !(0..n).any(|i| bad[i] && !out(&peers[i], now)) {
                let any_good = (0..n).any(|i| !bad[i] && !out(&peers[i], now));
                if count {
                    calls += left;
                    if any_good {
                        attempts += left;
                        sent += left;
                        ok += left;
                    } else {
                        no_live += left;
                    }
                }
                break;
            }
            left -= 1.0;
            let mut tried = vec![false; n];
            let mut made = 0u32;
            let end = loop {
                let Some(i) = pick(&mut peers, &tried, now, &out, ft) else {
                    break End::NoLive;
                };
                tried[i] = true;
                made += 1;
                let p = &mut peers[i];
                if !bad[i] {
                    if p.accessed < p.checked {
                        p.fails = 0;
                    }
                    break End::Ok;
                }
                if made < tries && made < n as u32 {
                    // Failed, and passed on to the next server.
                    p.fails += 1;
                    p.accessed = now;
                    p.checked = now;
                    if max_fails > 0 {
                        p.effective = (p.effective - 1 / i64::from(max_fails)).max(0);
                    }
                    continue;
                }
                // The last try: its answer is passed on, a success to the
                // upstream's books.
                if p.accessed < p.checked {
                    p.fails = 0;
                }
                break End::Error;
            };
            if count {
                calls += 1.0;
                attempts += f64::from(made);
                sent += f64::from(u8::from(made > 0));
                match end {
                    End::Ok => ok += 1.0,
                    End::Error => error += 1.0,
                    End::NoLive => no_live += 1.0,
                }
            }
        }
    }
    let per = |x: f64| if calls > 0.0 { x / calls } else { 0.0 };
    Steady {
        attempts: per(attempts),
        sent: per(sent),
        ok: per(ok),
        error: per(error),
        no_live: per(no_live),
    }
}

enum End {
    Ok,
    Error,
    NoLive,
}

/// nginx's choice of the next server for a call that has tried `tried`.
fn pick(
    peers: &mut [Peer],
    tried: &[bool],
    now: i64,
    out: &impl Fn(&Peer, i64) -> bool,
    ft: i64,
) -> Option<usize> {
    let mut best: Option<(usize, i64)> = None;
    let mut total = 0;
    for (i, p) in peers.iter_mut().enumerate() {
        if tried[i] || out(p, now) {
            continue;
        }
        p.current += p.effective;
        total += p.effective;
        if p.effective < 1 {
            p.effective += 1;
        }
        if best.is_none_or(|(_, c)| p.current > c) {
            best = Some((i, p.current));
        }
    }
    let (b, _) = best?;
    peers[b].current -= total;
    if now - peers[b].checked > ft {
        peers[b].checked = now;
    }
    Some(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_servers_failing_take_max_fails_and_two_per_period() {
        // The lab's measurement: 2 s out, 100 calls a second.
        for (max_fails, want) in [(1, 3.0), (2, 4.0), (3, 5.0)] {
            let s = steady(&[true, true], max_fails, 2, 2, 100.0);
            let per_sec = s.attempts * 100.0;
            assert!(
                (per_sec - want / 3.0).abs() < 0.02,
                "max_fails {max_fails}: {per_sec} a second"
            );
            assert!(s.ok == 0.0 && (s.error + s.no_live - 1.0).abs() < 1e-9);
        }
    }

    #[test]
    fn one_bad_server_of_three_is_kept_out() {
        let s = steady(&[true, false, false], 1, 10, 2, 100.0);
        assert!(s.ok > 0.999, "{s:?}");
        // The bad one is tried about once per 11 s: some 1% of calls
        // make two attempts.
        assert!(s.attempts < 1.01, "{s:?}");
        let none = steady(&[true, false], 0, 10, 2, 100.0);
        assert!(
            (none.attempts - 1.5).abs() < 0.01,
            "no passive check: {none:?}"
        );
    }
}
