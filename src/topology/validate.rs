//! Validation (placeholder).
use super::Topology;
use std::path::Path;
/// Topology errors.
#[derive(Debug, thiserror::Error)]
pub enum TopologyError {
    /// placeholder
    #[error("{0}")]
    Invalid(String),
}
pub(crate) fn load(path: &Path) -> Result<Topology, TopologyError> {
    Err(TopologyError::Invalid(path.display().to_string()))
}
pub(crate) fn from_yaml(_t: &str, o: &str) -> Result<Topology, TopologyError> {
    Err(TopologyError::Invalid(o.into()))
}
/// What `chaoslab check` prints for a valid topology.
pub fn render_check(t: &Topology) -> String {
    format!("{}\n", t.name)
}
