//! The `hop` bench with mimalloc as the global allocator (chaoslab's own):
//! the same pairs, the same flags. Each of the crates' few allocations a
//! request costs differently under glibc's malloc, whose per-thread cache
//! holds seven blocks of a size, so both are measured.

#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[path = "hop.rs"]
mod hop;

fn main() {
    hop::main()
}
