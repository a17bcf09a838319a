//! What the fleet measures, live: the counters the middleware feeds
//! ([`Metrics`]), the refusals of a full fleet, and the wire tap. Each
//! sample of them is a value of the model's ([`chaoslab_model::metrics`]),
//! re-exported here whole, so a reader never needs to know where a count
//! was made.

pub mod counters;
pub mod refusals;
pub mod tap;

pub use chaoslab_model::metrics::*;
pub use counters::Metrics;
