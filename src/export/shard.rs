//! Shards: a split's rows cut into files by rows or bytes, with their SHA-256 computed while
//! writing. What a file holds is up to a [`ShardWriter`]: JSON lines (optionally
//! zstd-compressed, [`JsonLines`]) or Parquet ([`super::parquet::ParquetShard`]).
//!
//! The number of shards is known only at the end, so shards are written as
//! `data/.{split}-{i:05}.partial` and renamed to `data/{split}-{i:05}-of-{n:05}.{ext}` by
//! [`ShardSet::commit`] once the whole run succeeded; the hidden partial names match no
//! `data_files` pattern, and a run that fails removes them. A partition's shards carry its tag
//! after the split (`data/{split}-part-00000-of-00002-{i:05}-of-{n:05}.{ext}`).

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::engine::output::{Rename, WritebackFile};
use crate::engine::partition::Partition;

/// How shards are cut and compressed.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ShardOptions {
    /// At most this many rows per shard.
    pub rows: Option<u64>,
    /// At most this many bytes of row data (JSON lines, or Parquet's column values) before
    /// compression per shard; a single larger row gets a shard of its own.
    pub bytes: Option<u64>,
    /// zstd level, when compressing JSON lines.
    pub zstd: Option<i32>,
    /// The partition whose shards these are (its tag goes into the file names, so the shards
    /// of N partitions writing to one directory never collide).
    #[serde(skip)]
    pub partition: Option<Partition>,
}

impl ShardOptions {
    /// `{split}-` for an unpartitioned run, `{split}-part-00000-of-00002-` for a partition: what
    /// a shard's file name starts with (so `data/{split}-*` matches every partition's shards).
    pub fn prefix(&self, split: &str) -> String {
        match &self.partition {
            Some(p) => format!("{split}-{}-", p.tag()),
            None => format!("{split}-"),
        }
    }
}

/// One written shard file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardFile {
    /// Path relative to the output directory (`data/train-00000-of-00001.jsonl`).
    pub path: String,
    /// The split.
    pub split: String,
    /// Rows.
    pub rows: u64,
    /// Bytes of the file as written (compressed when compressed).
    pub bytes: u64,
    /// Bytes of row data before compression.
    pub uncompressed_bytes: u64,
    /// SHA-256 of the file, lower-case hex.
    pub sha256: String,
}

/// A shard file being written: hashes and counts what passes through.
pub struct HashingFile {
    inner: BufWriter<WritebackFile>,
    hasher: Sha256,
    bytes: u64,
}

impl Write for HashingFile {
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

/// Writes the rows of one shard file.
pub trait ShardWriter: Sized + Send {
    /// One row.
    type Row: Send;
    /// What every file of a set shares (compression, metadata).
    type Config: Clone + Send;
    /// The file name extension (`jsonl`, `jsonl.zst`, `parquet`).
    fn extension(config: &Self::Config) -> &'static str;
    /// Starts a file.
    fn start(file: HashingFile, config: &Self::Config) -> io::Result<Self>;
    /// Appends a row of `len` bytes of data.
    fn write(&mut self, row: Self::Row, len: u64) -> io::Result<()>;
    /// Completes the file and hands it back.
    fn finish(self) -> io::Result<HashingFile>;
}

/// JSON lines, plain or zstd-compressed at the configured level.
pub enum JsonLines {
    /// Uncompressed.
    Plain(HashingFile),
    /// zstd.
    Zstd(zstd::stream::write::Encoder<'static, HashingFile>),
}

impl ShardWriter for JsonLines {
    type Row = Vec<u8>;
    type Config = Option<i32>;

    fn extension(zstd: &Option<i32>) -> &'static str {
        if zstd.is_some() {
            "jsonl.zst"
        } else {
            "jsonl"
        }
    }

    fn start(file: HashingFile, zstd: &Option<i32>) -> io::Result<Self> {
        Ok(match zstd {
            Some(level) => JsonLines::Zstd(zstd::stream::write::Encoder::new(file, *level)?),
            None => JsonLines::Plain(file),
        })
    }

    fn write(&mut self, line: Vec<u8>, _len: u64) -> io::Result<()> {
        match self {
            JsonLines::Plain(w) => w.write_all(&line),
            JsonLines::Zstd(w) => w.write_all(&line),
        }
    }

    fn finish(self) -> io::Result<HashingFile> {
        match self {
            JsonLines::Plain(w) => Ok(w),
            JsonLines::Zstd(w) => w.finish(),
        }
    }
}

struct Open<W> {
    writer: W,
    temp: PathBuf,
    rows: u64,
    uncompressed: u64,
}

/// A completed shard still under its partial name (what a run's journal records of it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClosedShard {
    /// Its number in the split (0-based).
    pub index: usize,
    /// Rows.
    pub rows: u64,
    /// Bytes of row data before compression.
    pub uncompressed: u64,
    /// Bytes of the file.
    pub bytes: u64,
    /// SHA-256 of the file, lower-case hex.
    pub sha256: String,
}

/// The shards of one split being written.
pub struct ShardSet<W: ShardWriter> {
    dir: PathBuf,
    split: String,
    opts: ShardOptions,
    config: W::Config,
    open: Option<Open<W>>,
    closed: Vec<ClosedShard>,
    committed: bool,
}

/// The partial name of shard `index` in `dir`, whose names start with `prefix`
/// ([`ShardOptions::prefix`]).
pub fn partial_path(dir: &Path, prefix: &str, index: usize) -> PathBuf {
    dir.join(format!(".{prefix}{index:05}.partial"))
}

impl<W: ShardWriter> ShardSet<W> {
    /// Shards of `split` under `dir` (the `data/` directory, which must exist).
    pub fn new(dir: &Path, split: &str, opts: &ShardOptions, config: &W::Config) -> Self {
        ShardSet {
            dir: dir.to_owned(),
            split: split.to_owned(),
            opts: opts.clone(),
            config: config.clone(),
            open: None,
            closed: Vec::new(),
            committed: false,
        }
    }

    /// Shards of `split` under `dir` of a resumed run: `closed` are shards an interrupted run
    /// completed (each file must be there, with its recorded length); the next row starts a
    /// new shard.
    pub fn resume(
        dir: &Path,
        split: &str,
        opts: &ShardOptions,
        config: &W::Config,
        closed: Vec<ClosedShard>,
    ) -> io::Result<Self> {
        for (i, c) in closed.iter().enumerate() {
            let path = partial_path(dir, &opts.prefix(split), i);
            let len = fs::metadata(&path).map(|m| m.len()).ok();
            if c.index != i || len != Some(c.bytes) {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "{} is not the completed shard the run's journal recorded",
                        path.display()
                    ),
                ));
            }
        }
        let mut set = ShardSet::new(dir, split, opts, config);
        set.closed = closed;
        Ok(set)
    }

    /// True when a row of `len` bytes would start a new shard (none is open, or the open one
    /// is full).
    pub fn starts_shard(&self, len: u64) -> bool {
        match &self.open {
            None => true,
            Some(o) => {
                o.rows > 0
                    && (self.opts.rows.is_some_and(|r| o.rows >= r)
                        || self.opts.bytes.is_some_and(|b| o.uncompressed + len > b))
            }
        }
    }

    /// Rows written so far.
    pub fn rows(&self) -> u64 {
        self.closed.iter().map(|c| c.rows).sum::<u64>() + self.open.as_ref().map_or(0, |o| o.rows)
    }

    /// Appends one row of `len` bytes of data (for JSON lines, the line with its newline).
    pub fn write(&mut self, row: W::Row, len: u64) -> io::Result<()> {
        if self.open.is_some() && self.starts_shard(len) {
            self.close()?;
        }
        let open = match &mut self.open {
            Some(o) => o,
            None => {
                let o = self.start()?;
                self.open.insert(o)
            }
        };
        open.writer.write(row, len)?;
        open.rows += 1;
        open.uncompressed += len;
        Ok(())
    }

    fn start(&self) -> io::Result<Open<W>> {
        let temp = partial_path(&self.dir, &self.opts.prefix(&self.split), self.closed.len());
        let file = HashingFile {
            inner: BufWriter::with_capacity(1 << 20, WritebackFile::new(File::create(&temp)?, 0)),
            hasher: Sha256::new(),
            bytes: 0,
        };
        match W::start(file, &self.config) {
            Ok(writer) => Ok(Open {
                writer,
                temp,
                rows: 0,
                uncompressed: 0,
            }),
            Err(e) => {
                let _ = fs::remove_file(&temp);
                Err(e)
            }
        }
    }

    /// Completes the open shard, if any, and syncs it to disk; it keeps its partial name.
    pub fn close(&mut self) -> io::Result<Option<&ClosedShard>> {
        let Some(open) = self.open.take() else {
            return Ok(None);
        };
        // A shard that cannot be completed (a full disk) is removed at once: the set no
        // longer knows it.
        let completed = open.writer.finish().and_then(|mut file| {
            file.flush()?;
            file.inner.get_ref().file().sync_all()?;
            Ok(file)
        });
        let file = match completed {
            Ok(f) => f,
            Err(e) => {
                let _ = fs::remove_file(&open.temp);
                return Err(e);
            }
        };
        let sha256 = file
            .hasher
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        self.closed.push(ClosedShard {
            index: self.closed.len(),
            rows: open.rows,
            uncompressed: open.uncompressed,
            bytes: file.bytes,
            sha256,
        });
        Ok(self.closed.last())
    }

    /// Completes the last shard; the files keep their partial names until [`ShardSet::commit`].
    pub fn finish(&mut self) -> io::Result<()> {
        self.close().map(drop)
    }

    /// Renames the finished shards to their final names and describes them (paths relative to
    /// the parent of `data/`).
    pub fn commit(self) -> io::Result<Vec<ShardFile>> {
        let (renames, files) = self.into_commit()?;
        for (from, to) in renames {
            fs::rename(from, to)?;
        }
        Ok(files)
    }

    /// Completes the last shard and hands back the renames that give the shards their final
    /// names, with their descriptions, for the caller to commit: the partial files are no
    /// longer removed when the set is dropped.
    pub fn into_commit(mut self) -> io::Result<(Vec<Rename>, Vec<ShardFile>)> {
        self.close()?;
        let n = self.closed.len();
        let ext = W::extension(&self.config);
        let prefix = self.opts.prefix(&self.split);
        let mut renames = Vec::with_capacity(n);
        let mut files = Vec::with_capacity(n);
        for (i, c) in self.closed.iter().enumerate() {
            let name = format!("{prefix}{i:05}-of-{n:05}.{ext}");
            renames.push((partial_path(&self.dir, &prefix, i), self.dir.join(&name)));
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
        Ok((renames, files))
    }
}

impl<W: ShardWriter> Drop for ShardSet<W> {
    fn drop(&mut self) {
        if self.committed {
            return;
        }
        if let Some(o) = self.open.take() {
            drop(o.writer);
            let _ = fs::remove_file(&o.temp);
        }
        for c in &self.closed {
            let _ = fs::remove_file(partial_path(
                &self.dir,
                &self.opts.prefix(&self.split),
                c.index,
            ));
        }
    }
}

/// True when `name` is a shard file name this module writes
/// (`{split}-{i}-of-{n}.{jsonl,jsonl.zst,parquet}` or a partial one).
pub fn is_shard_name(name: &str) -> bool {
    (name.starts_with('.') && name.ends_with(".partial"))
        || ([".jsonl", ".jsonl.zst", ".parquet"]
            .iter()
            .any(|ext| name.ends_with(ext))
            && name.contains("-of-"))
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
        let mut set = ShardSet::<JsonLines>::new(dir.path(), "train", &opts, &None);
        for i in 0..5 {
            let line = format!("{{\"n\":{i}}}\n").into_bytes();
            let len = line.len() as u64;
            set.write(line, len).expect("write");
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
        let mut set = ShardSet::<JsonLines>::new(dir.path(), "test", &opts, &opts.zstd);
        for line in ["0123456789\n", "0123456789\n", "x\n"] {
            set.write(line.as_bytes().to_vec(), line.len() as u64)
                .expect("write");
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
        let mut set =
            ShardSet::<JsonLines>::new(dir.path(), "train", &ShardOptions::default(), &None);
        set.write(b"{}\n".to_vec(), 3).expect("write");
        drop(set);
        assert_eq!(fs::read_dir(dir.path()).expect("dir").count(), 0);
    }
}
