//! Opening inputs: files or stdin, transparently decompressing gzip and zstd.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

/// Buffer size for reading inputs.
const READ_BUFFER: usize = 1 << 20;

const GZIP: &[u8] = &[0x1f, 0x8b];
const ZSTD: &[u8] = &[0x28, 0xb5, 0x2f, 0xfd];

/// True when the file at `path` is read as it is by [`open`] (not stdin, not compressed): the
/// positions of the records framed from it are positions in the file.
pub fn is_plain_file(path: &str) -> bool {
    if path == "-" {
        return false;
    }
    let mut head = [0u8; 4];
    let Ok(mut file) = File::open(Path::new(path)) else {
        return false;
    };
    let mut filled = 0;
    while filled < head.len() {
        match file.read(&mut head[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
    let head = &head[..filled];
    file.metadata().is_ok_and(|m| m.is_file()) && !head.starts_with(GZIP) && !head.starts_with(ZSTD)
}

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
    Ok(if head.starts_with(GZIP) {
        Box::new(BufReader::with_capacity(
            READ_BUFFER,
            flate2::bufread::MultiGzDecoder::new(buffered),
        ))
    } else if head.starts_with(ZSTD) {
        Box::new(BufReader::with_capacity(
            READ_BUFFER,
            zstd::stream::read::Decoder::with_buffer(buffered)?,
        ))
    } else {
        Box::new(buffered)
    })
}
