//! The crate's tests against real sockets and a real build, in one test
//! binary: each binary links axum, hyper, h2 and tonic, and the optimised
//! build the tests run in pays for every link.

mod adoption;
mod grpc;
mod layer;
mod policy;
