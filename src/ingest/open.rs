//! Opening inputs: files or stdin, transparently decompressing gzip and zstd.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

/// Buffer size for reading inputs.
const READ_BUFFER: usize = 1 << 20;

/// Opens `path` (`-` is stdin) as a buffered reader of decompressed bytes. Compression is
/// detected from the first bytes, not the name: gzip (`1f 8b`, possibly several members) or
/// zstd (`28 b5 2f fd`).
pub fn open(path: &str) -> io::Result<Box<dyn BufRead + Send>> {
    let raw: Box<dyn Read + Send> = if path == "-" {
        Box::new(io::stdin())
    } else {
        Box::new(File::open(Path::new(path))?)
    };
    let mut buffered = BufReader::with_capacity(READ_BUFFER, raw);
    let head = buffered.fill_buf()?;
    Ok(if head.starts_with(&[0x1f, 0x8b]) {
        Box::new(BufReader::with_capacity(
            READ_BUFFER,
            flate2::bufread::MultiGzDecoder::new(buffered),
        ))
    } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        Box::new(BufReader::with_capacity(
            READ_BUFFER,
            zstd::stream::read::Decoder::with_buffer(buffered)?,
        ))
    } else {
        Box::new(buffered)
    })
}
