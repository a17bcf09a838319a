//! The crate's tests against real sockets, in one test binary: each
//! binary links axum, hyper, h2 and tonic, and the optimised build the
//! tests run in pays for every link. (The README example of both halves,
//! built in a new project, is tested in `reqwest-error-ownership`, which
//! uses both crates.)

mod grpc;
mod layer;
mod policy;
