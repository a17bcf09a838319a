//! A topology file, as `chaoslab check` loads it: see `chaoslab::fuzzing::topology`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| chaoslab::fuzzing::topology(data));
