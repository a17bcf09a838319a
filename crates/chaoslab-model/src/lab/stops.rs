//! What ownership stopped, caller by caller: the retries the services
//! above each immediate caller of a failing service would have sent, as
//! Uber counts its 200,000 at one caller and 9.5 million in all (SPEC
//! section 14).

use super::figures::Window;

/// The retries ownership stopped on the paths through one immediate
/// caller of a failing service: Uber's "requests stopped at an immediate
/// caller and at its ancestors".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallerStops {
    /// The immediate caller.
    pub caller: usize,
    /// The service it calls that claimed errors in the window.
    pub owner: usize,
    /// Retries suppressed on calls into the caller and into every service
    /// above it.
    pub stopped: u64,
}

impl Window<'_> {
    /// For each immediate caller of a service that claimed errors in the
    /// window (an owner), the retries suppressed on every call into that
    /// caller or into a service above it, largest first; callers with none
    /// are left out. Where the paths through two callers share no
    /// service, their counts add up to [`crate::metrics::Counts::spurious_avoided`].
    pub fn stops_by_caller(&self) -> Vec<CallerStops> {
        let t = self.topology;
        let n = t.services.len().min(self.counts.services.len());
        let owners: Vec<usize> = (0..n)
            .filter(|&i| self.counts.services[i].claims_returned[0] > 0)
            .collect();
        if owners.is_empty() {
            return vec![];
        }
        let mut into: Vec<Vec<usize>> = vec![vec![]; t.services.len()];
        for (k, e) in t.edges.iter().enumerate() {
            into[e.to].push(k);
        }
        let suppressed = |k: usize| self.counts.edges.get(k).map_or(0, |e| e.suppressed);
        let mut seen = vec![usize::MAX; t.services.len()];
        let mut out = vec![];
        let mut mark = 0;
        for &owner in &owners {
            for &k in &into[owner] {
                let caller = t.edges[k].from;
                mark += 1;
                seen[caller] = mark;
                let mut stack = vec![caller];
                let mut stopped = 0;
                while let Some(v) = stack.pop() {
                    for &k in &into[v] {
                        stopped += suppressed(k);
                        let u = t.edges[k].from;
                        if seen[u] != mark {
                            seen[u] = mark;
                            stack.push(u);
                        }
                    }
                }
                if stopped > 0 {
                    out.push(CallerStops {
                        caller,
                        owner,
                        stopped,
                    });
                }
            }
        }
        out.sort_by(|a, b| b.stopped.cmp(&a.stopped).then(a.caller.cmp(&b.caller)));
        out
    }
}
