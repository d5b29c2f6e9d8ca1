//! Shards: a split's rows cut into files by rows or bytes, optionally zstd-compressed, with
//! their SHA-256 computed while writing.
//!
//! The number of shards is known only at the end, so shards are written as
//! `data/.{split}-{i:05}.partial` and renamed to `data/{split}-{i:05}-of-{n:05}.jsonl[.zst]`
//! by [`ShardSet::commit`] once the whole run succeeded; the hidden partial names match no
//! `data_files` pattern, and a run that fails removes them.

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;
use sha2::{Digest, Sha256};

/// How shards are cut and compressed.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ShardOptions {
    /// At most this many rows per shard.
    pub rows: Option<u64>,
    /// At most this many bytes of JSON lines (before compression) per shard; a single larger
    /// row gets a shard of its own.
    pub bytes: Option<u64>,
    /// zstd level, when compressing.
    pub zstd: Option<i32>,
}

/// One written shard file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ShardFile {
    /// Path relative to the output directory (`data/train-00000-of-00001.jsonl`).
    pub path: String,
    /// The split.
    pub split: String,
    /// Rows (JSON lines).
    pub rows: u64,
    /// Bytes of the file as written (compressed when compressed).
    pub bytes: u64,
    /// Bytes of JSON lines before compression.
    pub uncompressed_bytes: u64,
    /// SHA-256 of the file, lower-case hex.
    pub sha256: String,
}

/// A writer that hashes and counts what passes through.
struct Hashing<W> {
    inner: W,
    hasher: Sha256,
    bytes: u64,
}

impl<W: Write> Write for Hashing<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

enum Sink {
    Plain(Hashing<BufWriter<File>>),
    Zstd(zstd::stream::write::Encoder<'static, Hashing<BufWriter<File>>>),
}

struct Open {
    sink: Sink,
    temp: PathBuf,
    rows: u64,
    uncompressed: u64,
}

struct Closed {
    temp: PathBuf,
    rows: u64,
    uncompressed: u64,
    bytes: u64,
    sha256: String,
}

/// The shards of one split being written.
pub struct ShardSet {
    dir: PathBuf,
    split: String,
    opts: ShardOptions,
    open: Option<Open>,
    closed: Vec<Closed>,
    committed: bool,
}

impl ShardSet {
    /// Shards of `split` under `dir` (the `data/` directory, which must exist).
    pub fn new(dir: &Path, split: &str, opts: &ShardOptions) -> ShardSet {
        ShardSet {
            dir: dir.to_owned(),
            split: split.to_owned(),
            opts: opts.clone(),
            open: None,
            closed: Vec::new(),
            committed: false,
        }
    }

    /// Rows written so far.
    pub fn rows(&self) -> u64 {
        self.closed.iter().map(|c| c.rows).sum::<u64>() + self.open.as_ref().map_or(0, |o| o.rows)
    }

    /// Appends one JSON line (with its newline).
    pub fn write(&mut self, line: &[u8]) -> io::Result<()> {
        let len = line.len() as u64;
        let full = self.open.as_ref().is_some_and(|o| {
            o.rows > 0
                && (self.opts.rows.is_some_and(|r| o.rows >= r)
                    || self.opts.bytes.is_some_and(|b| o.uncompressed + len > b))
        });
        if full {
            self.close()?;
        }
        let open = match &mut self.open {
            Some(o) => o,
            None => {
                let o = self.start()?;
                self.open.insert(o)
            }
        };
        match &mut open.sink {
            Sink::Plain(w) => w.write_all(line)?,
            Sink::Zstd(w) => w.write_all(line)?,
        }
        open.rows += 1;
        open.uncompressed += len;
        Ok(())
    }

    fn start(&self) -> io::Result<Open> {
        let temp = self
            .dir
            .join(format!(".{}-{:05}.partial", self.split, self.closed.len()));
        let file = Hashing {
            inner: BufWriter::with_capacity(1 << 20, File::create(&temp)?),
            hasher: Sha256::new(),
            bytes: 0,
        };
        let sink = match self.opts.zstd {
            Some(level) => Sink::Zstd(zstd::stream::write::Encoder::new(file, level)?),
            None => Sink::Plain(file),
        };
        Ok(Open {
            sink,
            temp,
            rows: 0,
            uncompressed: 0,
        })
    }

    fn close(&mut self) -> io::Result<()> {
        let Some(open) = self.open.take() else {
            return Ok(());
        };
        let mut file = match open.sink {
            Sink::Plain(w) => w,
            Sink::Zstd(w) => w.finish()?,
        };
        file.flush()?;
        file.inner.get_ref().sync_all()?;
        let sha256 = file
            .hasher
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        self.closed.push(Closed {
            temp: open.temp,
            rows: open.rows,
            uncompressed: open.uncompressed,
            bytes: file.bytes,
            sha256,
        });
        Ok(())
    }

    /// Completes the last shard; the files keep their partial names until [`ShardSet::commit`].
    pub fn finish(&mut self) -> io::Result<()> {
        self.close()
    }

    /// Renames the finished shards to their final names and describes them (paths relative to
    /// the parent of `data/`).
    pub fn commit(mut self) -> io::Result<Vec<ShardFile>> {
        self.close()?;
        let n = self.closed.len();
        let ext = if self.opts.zstd.is_some() {
            "jsonl.zst"
        } else {
            "jsonl"
        };
        let mut files = Vec::with_capacity(n);
        for (i, c) in self.closed.iter().enumerate() {
            let name = format!("{}-{i:05}-of-{n:05}.{ext}", self.split);
            fs::rename(&c.temp, self.dir.join(&name))?;
            files.push(ShardFile {
                path: format!("data/{name}"),
                split: self.split.clone(),
                rows: c.rows,
                bytes: c.bytes,
                uncompressed_bytes: c.uncompressed,
                sha256: c.sha256.clone(),
            });
        }
        self.committed = true;
        Ok(files)
    }
}

impl Drop for ShardSet {
    fn drop(&mut self) {
        if self.committed {
            return;
        }
        if let Some(o) = self.open.take() {
            drop(o.sink);
            let _ = fs::remove_file(&o.temp);
        }
        for c in &self.closed {
            let _ = fs::remove_file(&c.temp);
        }
    }
}

/// True when `name` is a shard file name this module writes (`{split}-{i}-of-{n}.jsonl[.zst]`
/// or a partial one).
pub fn is_shard_name(name: &str) -> bool {
    (name.starts_with('.') && name.ends_with(".partial"))
        || ((name.ends_with(".jsonl") || name.ends_with(".jsonl.zst")) && name.contains("-of-"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sha256_hex(bytes: &[u8]) -> String {
        Sha256::digest(bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    #[test]
    fn cuts_by_rows_and_hashes_the_files() {
        let dir = tempfile::tempdir().expect("temp dir");
        let opts = ShardOptions {
            rows: Some(2),
            ..ShardOptions::default()
        };
        let mut set = ShardSet::new(dir.path(), "train", &opts);
        for i in 0..5 {
            set.write(format!("{{\"n\":{i}}}\n").as_bytes())
                .expect("write");
        }
        let files = set.commit().expect("commit");
        let names: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(
            names,
            [
                "data/train-00000-of-00003.jsonl",
                "data/train-00001-of-00003.jsonl",
                "data/train-00002-of-00003.jsonl"
            ]
        );
        let first = fs::read(dir.path().join("train-00000-of-00003.jsonl")).expect("read");
        assert_eq!(first, b"{\"n\":0}\n{\"n\":1}\n");
        assert_eq!(files[0].sha256, sha256_hex(&first));
        assert_eq!(files[2].rows, 1);
    }

    #[test]
    fn cuts_by_bytes_and_compresses() {
        let dir = tempfile::tempdir().expect("temp dir");
        let opts = ShardOptions {
            bytes: Some(20),
            zstd: Some(3),
            ..ShardOptions::default()
        };
        let mut set = ShardSet::new(dir.path(), "test", &opts);
        for line in ["0123456789\n", "0123456789\n", "x\n"] {
            set.write(line.as_bytes()).expect("write");
        }
        let files = set.commit().expect("commit");
        assert_eq!(files.len(), 2);
        let raw = fs::read(dir.path().join("test-00001-of-00002.jsonl.zst")).expect("read");
        assert_eq!(files[1].sha256, sha256_hex(&raw));
        assert_eq!(
            zstd::decode_all(&raw[..]).expect("zstd"),
            b"0123456789\nx\n"
        );
    }

    #[test]
    fn an_uncommitted_set_leaves_nothing() {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut set = ShardSet::new(dir.path(), "train", &ShardOptions::default());
        set.write(b"{}\n").expect("write");
        drop(set);
        assert_eq!(fs::read_dir(dir.path()).expect("dir").count(), 0);
    }
}
