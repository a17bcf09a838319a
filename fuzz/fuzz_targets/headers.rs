//! The claim (one copy a line), trace and deadline headers and the dialects' don't-retry headers: see `chaoslab::fuzzing::headers`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| chaoslab::fuzzing::headers(data));
