//! Placeholder: the nginx reader is being written.

use super::{BadInput, File, Read};

/// Reads one file.
pub fn read(f: &File, _out: &mut Read) -> Result<(), BadInput> {
    Err(BadInput::at(
        &f.name,
        1,
        "this format's reader is not written yet",
    ))
}
