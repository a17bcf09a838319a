//! A scenario file and a control-API body, against the seed topologies: see `chaoslab::fuzzing::scenario`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| chaoslab::fuzzing::scenario(data));
