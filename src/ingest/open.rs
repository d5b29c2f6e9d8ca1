//! Opening inputs: files or stdin, transparently decompressing gzip and zstd.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

/// Buffer size for reading inputs.
const READ_BUFFER: usize = 1 << 20;

/// Compression of an input, detected from its first bytes (not its name).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// Plain bytes.
    None,
    /// gzip (`1f 8b`), possibly several members.
    Gzip,
    /// zstd (`28 b5 2f fd`).
    Zstd,
}

/// Opens `path` (`-` is stdin) as a buffered reader of decompressed bytes.
pub fn open(path: &str) -> io::Result<(Box<dyn BufRead + Send>, Compression)> {
    let raw: Box<dyn Read + Send> = if path == "-" {
        Box::new(io::stdin())
    } else {
        Box::new(File::open(Path::new(path))?)
    };
    let mut buffered = BufReader::with_capacity(READ_BUFFER, raw);
    let head = buffered.fill_buf()?;
    let compression = if head.starts_with(&[0x1f, 0x8b]) {
        Compression::Gzip
    } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        Compression::Zstd
    } else {
        Compression::None
    };
    let reader: Box<dyn BufRead + Send> = match compression {
        Compression::None => Box::new(buffered),
        Compression::Gzip => Box::new(BufReader::with_capacity(
            READ_BUFFER,
            flate2::bufread::MultiGzDecoder::new(buffered),
        )),
        Compression::Zstd => Box::new(BufReader::with_capacity(
            READ_BUFFER,
            zstd::stream::read::Decoder::with_buffer(buffered)?,
        )),
    };
    Ok((reader, compression))
}
