//! Where the events' texts are read back from when a session is emitted: the input file at
//! their offsets, or a copy in memory.

use std::fs::File;
use std::io;

/// Where the events' texts are read back from.
pub(super) enum Texts {
    /// The input file, at the events' offsets.
    File(File),
    /// A copy, at the events' offsets in it.
    Memory(Vec<u8>),
}

impl Texts {
    /// Appends the `len` bytes at `offset` to `out`.
    pub(super) fn read(&self, offset: u64, len: usize, out: &mut Vec<u8>) -> io::Result<()> {
        match self {
            Texts::Memory(bytes) => {
                let text = usize::try_from(offset)
                    .ok()
                    .and_then(|at| bytes.get(at..at.checked_add(len)?))
                    .ok_or_else(|| io::Error::other("event text out of range"))?;
                out.extend_from_slice(text);
                Ok(())
            }
            Texts::File(file) => {
                let start = out.len();
                out.resize(start + len, 0);
                read_at(file, &mut out[start..], offset)
            }
        }
    }
}

#[cfg(unix)]
pub(super) fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
}

#[cfg(not(unix))]
pub(super) fn read_at(mut file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    use std::io::{Seek, SeekFrom};
    file.seek(SeekFrom::Start(offset))?;
    file.read_exact(buf)
}
