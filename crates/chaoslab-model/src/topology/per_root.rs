//! A service's calls per request of each root, kept sparse.
//!
//! In a mesh of many roots most services are reached by a few of them:
//! on a 5,000-service mesh drawn like Meta's (650 roots, 8,187 endpoint
//! nodes) a dense list per node is 5.3 million numbers, nearly all zero,
//! and every baseline (one per node per window, 120 a node for a
//! snapshot's history) summed all of them. Only the roots that reach the
//! node are kept here.

use std::sync::Arc;

/// Calls a node receives per request of each root, over `roots` roots;
/// the roots that do not reach it are not stored. Shared, not copied, by
/// the clones a topology of many roots makes of itself.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PerRoot {
    roots: usize,
    reach: Arc<[(u32, f64)]>,
}

impl PerRoot {
    /// From a dense list, one value per root in root order.
    pub fn from_dense(values: &[f64]) -> PerRoot {
        PerRoot {
            roots: values.len(),
            reach: values
                .iter()
                .enumerate()
                .filter(|&(_, &m)| m != 0.0)
                .map(|(k, &m)| (k as u32, m))
                .collect(),
        }
    }

    /// One root, reaching the node `m` times a request.
    pub fn one(m: f64) -> PerRoot {
        PerRoot::from_dense(&[m])
    }

    /// How many roots it is over (0 before validation has counted them).
    pub fn len(&self) -> usize {
        self.roots
    }

    /// Whether it is over no root.
    pub fn is_empty(&self) -> bool {
        self.roots == 0
    }

    /// Calls per request of root `k` (0 for a root that does not reach
    /// the node); `None` past the last root.
    pub fn get(&self, k: usize) -> Option<f64> {
        if k >= self.roots {
            return None;
        }
        Some(
            self.reach
                .binary_search_by_key(&(k as u32), |&(r, _)| r)
                .map_or(0.0, |i| self.reach[i].1),
        )
    }

    /// The roots that reach the node, with their calls per request, in
    /// root order.
    pub fn reaching(&self) -> impl Iterator<Item = (usize, f64)> + '_ {
        self.reach.iter().map(|&(k, m)| (k as usize, m))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_what_reaches_and_answers_zero_for_the_rest() {
        let p = PerRoot::from_dense(&[0.0, 1.5, 0.0, 2.0]);
        assert_eq!(p.len(), 4);
        assert_eq!(p.get(0), Some(0.0));
        assert_eq!(p.get(1), Some(1.5));
        assert_eq!(p.get(3), Some(2.0));
        assert_eq!(p.get(4), None);
        assert_eq!(p.reaching().collect::<Vec<_>>(), vec![(1, 1.5), (3, 2.0)]);
        assert!(PerRoot::default().is_empty());
        assert_eq!(PerRoot::one(3.0).get(0), Some(3.0));
    }
}
