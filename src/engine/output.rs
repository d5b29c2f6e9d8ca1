//! Output files written atomically: bytes go to a temporary file beside the target, which is
//! renamed over the target only when complete. An interrupted run leaves no finished-looking
//! partial file (the temporary is removed when dropped unfinished). A target that exists and
//! is not a regular file (`/dev/null`, a named pipe, a terminal) is written in place: renaming
//! over it would replace the device with a plain file.
//!
//! A command holds a [`Lock`] on every output it writes (a file, or an export directory) for
//! its whole run, so two commands never write the same output at once. A temporary file left
//! by a killed command (`NAME.tmp-PID` of a process no longer running) is removed by the next
//! command that writes `NAME`.
//!
//! Diagnostics go to stderr through [`Stderr`] and [`warn`], which drop what cannot be written
//! (a closed or full stderr must not stop a command); stdout goes through [`Stdout`], which
//! notes a closed pipe so that the command can end quietly ([`stdout_closed`]).
//!
//! Output files are synced before they are renamed into place. So that the sync does not wait
//! for the whole file at the end, [`WritebackFile`] has the kernel start writing each chunk to
//! disk as soon as it is written.

use std::fmt;
use std::fs::{self, File};
use std::io::{self, BufWriter, Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::engine::partition::Partition;
use crate::ingest::Provenance;
use crate::validate::Diagnostic;

/// Set once a write to stdout failed because nothing reads it any more (EPIPE).
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// True once a write to stdout failed because its reader went away (`trajkit ... | head`):
/// the command then stops, and ends quietly as `ripgrep` does.
pub fn stdout_closed() -> bool {
    STDOUT_CLOSED.load(Ordering::Relaxed)
}

/// Standard output that notes a closed pipe (see [`stdout_closed`]).
pub struct Stdout(io::Stdout);

/// Standard output through [`Stdout`].
pub fn stdout() -> Stdout {
    Stdout(io::stdout())
}

fn note_broken_pipe<T>(r: io::Result<T>) -> io::Result<T> {
    if r.as_ref()
        .is_err_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
    {
        STDOUT_CLOSED.store(true, Ordering::Relaxed);
    }
    r
}

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        note_broken_pipe(self.0.write(buf))
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        note_broken_pipe(self.0.write_all(buf))
    }

    fn flush(&mut self) -> io::Result<()> {
        note_broken_pipe(self.0.flush())
    }
}

/// Writes `text` to stdout and flushes it (a closed stdout is an error, noted by
/// [`stdout_closed`]).
pub fn print(text: &str) -> io::Result<()> {
    let mut out = stdout();
    out.write_all(text.as_bytes())?;
    out.flush()
}

/// Standard error for diagnostics and summaries: what cannot be written (stderr closed or
/// full) is dropped, never an error or a panic.
pub struct Stderr;

impl Write for Stderr {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        Ok(io::stderr().write(buf).unwrap_or(buf.len()))
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        let _ = io::stderr().write_all(buf);
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        let _ = io::stderr().flush();
        Ok(())
    }
}

/// Writes a line to stderr, its control characters escaped (it may quote the data: see
/// [`crate::terminal`]); dropped when stderr is closed or full (see [`Stderr`]).
pub fn warn(line: fmt::Arguments<'_>) {
    let line = line.to_string();
    let _ = writeln!(Stderr, "{}", crate::terminal::escape_controls(&line));
}

/// Where a command writes: stdout (`-`) or an atomically written file.
pub enum Output {
    /// Standard output.
    Stdout(BufWriter<Stdout>),
    /// A file being written under a temporary name.
    File(AtomicFile),
    /// A device or pipe, written in place.
    Special(BufWriter<File>),
}

/// True when `path` exists and is neither a regular file nor a directory.
fn is_special(path: &Path) -> bool {
    fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir())
}

impl Output {
    /// Opens `path` for writing (`-` is stdout).
    pub fn create(path: &str) -> io::Result<Output> {
        match Output::create_special(path)? {
            Some(out) => Ok(out),
            None => AtomicFile::create(Path::new(path)).map(Output::File),
        }
    }

    /// Like [`Output::create`], but a file is written by [`AtomicFile::resumable`].
    pub fn resumable(path: &str, keep: u64) -> io::Result<Output> {
        match Output::create_special(path)? {
            Some(out) => Ok(out),
            None => AtomicFile::resumable(Path::new(path), keep).map(Output::File),
        }
    }

    /// Stdout or a device, or `None` for a file path.
    fn create_special(path: &str) -> io::Result<Option<Output>> {
        if path == "-" {
            Ok(Some(Output::Stdout(BufWriter::with_capacity(
                1 << 20,
                stdout(),
            ))))
        } else if is_special(Path::new(path)) {
            let file = fs::OpenOptions::new().write(true).open(path)?;
            Ok(Some(Output::Special(BufWriter::with_capacity(
                1 << 20,
                file,
            ))))
        } else {
            Ok(None)
        }
    }

    /// Flushes and syncs a file, and returns its length; `None` for stdout and devices, whose
    /// bytes cannot be taken back.
    pub fn checkpoint(&mut self) -> io::Result<Option<u64>> {
        match self {
            Output::File(f) => f.checkpoint().map(Some),
            Output::Stdout(_) | Output::Special(_) => Ok(None),
        }
    }

    /// Flushes, and for a file syncs it and hands back its temporary name and target without
    /// renaming it ([`AtomicFile::into_pending`]); `None` for stdout and devices.
    pub fn into_pending(self) -> io::Result<Option<(PathBuf, PathBuf)>> {
        match self {
            Output::Stdout(mut w) => w.flush().map(|()| None),
            Output::File(f) => f.into_pending().map(Some),
            Output::Special(mut w) => w.flush().map(|()| None),
        }
    }

    /// Flushes, and for files renames the temporary to the target.
    pub fn finish(self) -> io::Result<()> {
        match self {
            Output::Stdout(mut w) => w.flush(),
            Output::File(f) => f.finish(),
            Output::Special(mut w) => w.flush(),
        }
    }
}

impl Write for Output {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Output::Stdout(w) => w.write(buf),
            Output::File(f) => f.write(buf),
            Output::Special(w) => w.write(buf),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Output::Stdout(w) => w.write_all(buf),
            Output::File(f) => f.write_all(buf),
            Output::Special(w) => w.write_all(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Output::Stdout(w) => w.flush(),
            Output::File(f) => f.flush(),
            Output::Special(w) => w.flush(),
        }
    }
}

/// `target` with `suffix` appended to its file name, once its parent directories exist.
fn temp_beside(target: &Path, suffix: &str) -> io::Result<PathBuf> {
    if let Some(parent) = target.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent)?;
    }
    let mut name = target
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "output path has no file name"))?
        .to_os_string();
    name.push(suffix);
    Ok(target.with_file_name(name))
}

/// Bytes written to a [`WritebackFile`] between two starts of writeback.
const WRITEBACK_CHUNK: u64 = 16 << 20;

/// A file written from its start (or from a given offset) that has the kernel start writing
/// back every `WRITEBACK_CHUNK` bytes as they are written, without waiting for it. The sync
/// that completes the file then waits for the last chunk, not for all of it (the final sync of
/// a 566 MB output took 0.23 s before, 0.007 s with it). Only on Linux (`sync_file_range`);
/// elsewhere it is the plain file.
pub struct WritebackFile {
    file: File,
    /// Where the next byte goes.
    offset: u64,
    /// Where the bytes not yet handed to writeback start.
    pending: u64,
}

impl WritebackFile {
    /// Wraps `file`, whose next write goes at `offset`.
    pub fn new(file: File, offset: u64) -> WritebackFile {
        WritebackFile {
            file,
            offset,
            pending: offset,
        }
    }

    /// The file.
    pub fn file(&self) -> &File {
        &self.file
    }
}

/// Environment variable of the test hook that simulates a full disk: a write that would take
/// an output file (an atomically written file or a shard) past this many bytes fails with
/// `StorageFull`.
pub const WRITE_LIMIT: &str = "TRAJKIT_TEST_WRITE_LIMIT";

/// The limit of [`WRITE_LIMIT`], read once.
fn write_limit() -> Option<u64> {
    static LIMIT: OnceLock<Option<u64>> = OnceLock::new();
    *LIMIT.get_or_init(|| std::env::var(WRITE_LIMIT).ok().and_then(|v| v.parse().ok()))
}

impl Write for WritebackFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if write_limit().is_some_and(|l| self.offset + buf.len() as u64 > l) {
            return Err(io::Error::new(
                io::ErrorKind::StorageFull,
                "no space left on device (test hook)",
            ));
        }
        let n = self.file.write(buf)?;
        self.offset += n as u64;
        if self.offset - self.pending >= WRITEBACK_CHUNK {
            start_writeback(&self.file, self.pending, self.offset - self.pending);
            self.pending = self.offset;
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

/// Asks the kernel to start writing `len` bytes at `offset` of `file` to disk, and returns
/// at once. Advisory: a failure is ignored here, as the sync that completes the file reports
/// any error of writing it.
#[cfg(target_os = "linux")]
fn start_writeback(file: &File, offset: u64, len: u64) {
    use std::os::fd::AsRawFd;
    let (Ok(offset), Ok(len)) = (i64::try_from(offset), i64::try_from(len)) else {
        return;
    };
    // SAFETY: the descriptor is open for the call (borrowed from `file`), and
    // `sync_file_range` reads no memory of this process.
    unsafe {
        libc::sync_file_range(file.as_raw_fd(), offset, len, libc::SYNC_FILE_RANGE_WRITE);
    }
}

#[cfg(not(target_os = "linux"))]
fn start_writeback(_file: &File, _offset: u64, _len: u64) {}

/// A file written under `NAME.tmp-PID` and renamed to `NAME` by [`AtomicFile::finish`].
pub struct AtomicFile {
    target: PathBuf,
    temp: PathBuf,
    writer: Option<BufWriter<WritebackFile>>,
}

impl AtomicFile {
    /// Creates the temporary file beside `target` (creating parent directories), once the
    /// temporary files of `target` that killed processes left are removed.
    pub fn create(target: &Path) -> io::Result<AtomicFile> {
        let temp = temp_beside(target, &format!(".tmp-{}", std::process::id()))?;
        remove_stale_temps(target);
        let file = File::create(&temp)?;
        Ok(AtomicFile {
            target: target.to_path_buf(),
            temp,
            writer: Some(BufWriter::with_capacity(
                1 << 20,
                WritebackFile::new(file, 0),
            )),
        })
    }

    /// Like [`AtomicFile::create`], but under the fixed name `NAME.partial` and keeping its
    /// first `keep` bytes when it exists (a resumed run goes on writing where its checkpoint
    /// was; see [`AtomicFile::checkpoint`]). `keep` 0 starts an empty file.
    pub fn resumable(target: &Path, keep: u64) -> io::Result<AtomicFile> {
        let temp = temp_beside(target, ".partial")?;
        let mut file = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&temp)?;
        let len = file.metadata()?.len();
        if len < keep {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "{} holds {len} bytes, fewer than the {keep} the checkpoint recorded",
                    temp.display()
                ),
            ));
        }
        file.set_len(keep)?;
        file.seek(io::SeekFrom::Start(keep))?;
        Ok(AtomicFile {
            target: target.to_path_buf(),
            temp,
            writer: Some(BufWriter::with_capacity(
                1 << 20,
                WritebackFile::new(file, keep),
            )),
        })
    }

    /// Flushes and syncs what was written so far, and returns the file's length.
    pub fn checkpoint(&mut self) -> io::Result<u64> {
        let w = self.writer()?;
        w.flush()?;
        let mut file = w.get_ref().file();
        file.sync_data()?;
        file.stream_position()
    }

    /// Flushes and syncs the file, and hands back its temporary name and its target without
    /// renaming it: the caller commits it (see [`Commit`]). The temporary is no longer removed
    /// when this is dropped.
    pub fn into_pending(mut self) -> io::Result<(PathBuf, PathBuf)> {
        if let Some(w) = self.writer.take() {
            let done = w
                .into_inner()
                .map_err(io::IntoInnerError::into_error)
                .and_then(|f| f.file().sync_all());
            if let Err(e) = done {
                let _ = fs::remove_file(&self.temp);
                return Err(e);
            }
        }
        Ok((self.temp.clone(), self.target.clone()))
    }

    /// Flushes, syncs and renames the file into place (the temporary is removed on an error).
    pub fn finish(self) -> io::Result<()> {
        let (temp, target) = self.into_pending()?;
        fs::rename(&temp, &target).inspect_err(|_| {
            let _ = fs::remove_file(&temp);
        })
    }

    fn writer(&mut self) -> io::Result<&mut BufWriter<WritebackFile>> {
        self.writer
            .as_mut()
            .ok_or_else(|| io::Error::other("output already finished"))
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.writer()?.write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.writer()?.write_all(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.writer()?.flush()
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if self.writer.take().is_some() {
            let _ = fs::remove_file(&self.temp);
        }
    }
}

/// Removes the temporary files of `target` (`NAME.tmp-PID`) whose process no longer runs: a
/// killed command leaves its temporary file behind.
fn remove_stale_temps(target: &Path) {
    let (Some(name), Some(dir)) = (target.file_name().and_then(|n| n.to_str()), target.parent())
    else {
        return;
    };
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let prefix = format!("{name}.tmp-");
    for entry in entries.flatten() {
        let file = entry.file_name();
        let pid = file
            .to_str()
            .and_then(|f| f.strip_prefix(&prefix))
            .and_then(|p| p.parse::<u32>().ok());
        if pid.is_some_and(|p| p != std::process::id() && !process_runs(p)) {
            let _ = fs::remove_file(entry.path());
        }
    }
}

/// True unless process `pid` is known not to run (on Linux, `kill(pid, 0)` says so).
#[cfg(target_os = "linux")]
fn process_runs(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return true;
    };
    // SAFETY: signal 0 sends nothing; the call only checks that the process exists.
    let sent = unsafe { libc::kill(pid, 0) };
    sent == 0 || io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

#[cfg(not(target_os = "linux"))]
fn process_runs(_pid: u32) -> bool {
    true
}

/// An exclusive advisory lock on an output, held while a command writes it: a second command
/// that would write the same output is refused at once ([`LockError::Busy`], naming the
/// process that holds it). The lock is a file that records the holder's pid and command line:
/// `PATH.lock` beside an output file, `DIR/.trajkit.lock` in an export directory (a partition's
/// is `DIR/.trajkit.part-I-of-N.lock`, as N partitions may write one directory). It is removed
/// when the lock is released (dropped).
#[derive(Debug)]
pub struct Lock {
    path: PathBuf,
    file: File,
}

/// Why an output could not be locked.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another process holds the lock.
    #[error(
        "{what} is being written by another trajkit process ({holder}; lock file {lock}); \
         wait for it to end, or write elsewhere"
    )]
    Busy {
        /// The output.
        what: String,
        /// The holder's pid and command line, as its lock file records them.
        holder: String,
        /// The lock file.
        lock: String,
    },
    /// The lock file could not be created or locked.
    #[error("cannot lock {what} ({lock}): {source}")]
    Io {
        /// The output.
        what: String,
        /// The lock file.
        lock: String,
        /// Why.
        source: io::Error,
    },
}

/// The name of an export directory's lock file, for a partition or not.
pub fn dir_lock_name(partition: Option<&Partition>) -> String {
    match partition {
        Some(p) => format!(".trajkit.{}.lock", p.tag()),
        None => ".trajkit.lock".to_owned(),
    }
}

impl Lock {
    /// Locks the output file `path` (through `PATH.lock`); `None` for stdout (`-`) and devices,
    /// which are not replaced.
    pub fn file(path: &str) -> Result<Option<Lock>, LockError> {
        if path == "-" || is_special(Path::new(path)) {
            return Ok(None);
        }
        let lock = temp_beside(Path::new(path), ".lock").map_err(|source| LockError::Io {
            what: path.to_owned(),
            lock: format!("{path}.lock"),
            source,
        })?;
        Lock::acquire(lock, path).map(Some)
    }

    /// Locks the export directory `dir` (created if missing) for an export of `partition`.
    pub fn dir(dir: &Path, partition: Option<&Partition>) -> Result<Lock, LockError> {
        let lock = dir.join(dir_lock_name(partition));
        let what = dir.display().to_string();
        fs::create_dir_all(dir).map_err(|source| LockError::Io {
            what: what.clone(),
            lock: lock.display().to_string(),
            source,
        })?;
        Lock::acquire(lock, &what)
    }

    /// Takes the lock file `path` of the output `what`, and records this process in it.
    fn acquire(path: PathBuf, what: &str) -> Result<Lock, LockError> {
        let io_err = |source: io::Error| LockError::Io {
            what: what.to_owned(),
            lock: path.display().to_string(),
            source,
        };
        loop {
            let mut file = fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .read(true)
                .write(true)
                .open(&path)
                .map_err(io_err)?;
            match file.try_lock() {
                Ok(()) => {}
                Err(fs::TryLockError::WouldBlock) => {
                    return Err(LockError::Busy {
                        what: what.to_owned(),
                        holder: holder(&mut file),
                        lock: path.display().to_string(),
                    });
                }
                Err(fs::TryLockError::Error(e)) => return Err(io_err(e)),
            }
            // The holder before removes the file when it releases the lock: locking a file
            // no longer (or no longer the one) at `path` locks nothing, so try again.
            if !same_file(&file, &path) {
                continue;
            }
            let command: Vec<String> = std::env::args_os()
                .map(|a| a.to_string_lossy().into_owned())
                .collect();
            let record = format!("pid {}: {}\n", std::process::id(), command.join(" "));
            file.set_len(0).map_err(io_err)?;
            file.write_all(record.as_bytes()).map_err(io_err)?;
            return Ok(Lock { path, file });
        }
    }
}

/// The holder of a lock file, as it records itself: read again for up to 2 s while it is
/// empty (the holder writes it just after taking the lock; on a loaded machine that can take
/// more than a moment, and the wait only happens in that window).
fn holder(file: &mut File) -> String {
    for _ in 0..200 {
        let mut text = String::new();
        let read = file
            .seek(io::SeekFrom::Start(0))
            .and_then(|_| file.read_to_string(&mut text));
        if read.is_ok() && !text.trim().is_empty() {
            return text.trim().to_owned();
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    "pid unknown".to_owned()
}

/// True when `path` names the open file `file` (the same inode).
#[cfg(unix)]
fn same_file(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

#[cfg(not(unix))]
fn same_file(_file: &File, path: &Path) -> bool {
    path.exists()
}

impl Drop for Lock {
    /// Removes the lock file while still holding it, then releases it (see `Lock::acquire`
    /// for why a waiting process then tries again).
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
        let _ = self.file.unlock();
    }
}

/// A temporary file's name and the target it is renamed to.
pub type Rename = (PathBuf, PathBuf);

/// The last step of a command that writes several files: preparing the place (setting aside
/// what a reader reads now), removing what the new files replace, renaming the finished
/// temporary files into place, writing the small files that describe them (manifests, dataset
/// cards), and removing what was set aside. [`Commit::apply`] can be repeated after a kill at
/// any point of it and completes it (`trajkit run --resume` does, from the copy in its
/// journal).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Commit {
    /// Done first, in order: files written and renamed so that a reader goes on reading what
    /// it read before while the steps after move files (an export's dataset card naming its
    /// shards where they are set aside).
    #[serde(default)]
    pub prepare: Vec<Prepare>,
    /// Then removed (an earlier export's shards, a stale merged manifest).
    pub remove: Vec<PathBuf>,
    /// Then renamed, temporary name to target.
    pub rename: Vec<Rename>,
    /// Then written (atomically), path and text.
    pub write: Vec<(PathBuf, String)>,
    /// Removed last, once the new files are in place: files set aside, then directories left
    /// empty.
    #[serde(default)]
    pub clean: Vec<PathBuf>,
}

/// A step of [`Commit::prepare`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Prepare {
    /// Write (atomically) a file with this text.
    Write(PathBuf, String),
    /// Rename a file (creating the target's directory); passed over once done.
    Rename(PathBuf, PathBuf),
}

/// Environment variable of the test hook that simulates a kill while outputs are committed:
/// the process aborts after this many steps of a [`Commit`] (removals, renames, writes; 0:
/// before the first).
pub const ABORT_IN_COMMIT: &str = "TRAJKIT_TEST_ABORT_IN_COMMIT";

impl Commit {
    /// Makes every path absolute (against the current directory), so that the commit means the
    /// same files when it is applied again from another directory (`run --resume`).
    pub fn make_absolute(&mut self) -> io::Result<()> {
        for step in &mut self.prepare {
            match step {
                Prepare::Write(p, _) => *p = std::path::absolute(&*p)?,
                Prepare::Rename(from, to) => {
                    *from = std::path::absolute(&*from)?;
                    *to = std::path::absolute(&*to)?;
                }
            }
        }
        for p in self.remove.iter_mut().chain(&mut self.clean) {
            *p = std::path::absolute(&*p)?;
        }
        for (from, to) in &mut self.rename {
            *from = std::path::absolute(&*from)?;
            *to = std::path::absolute(&*to)?;
        }
        for (p, _) in &mut self.write {
            *p = std::path::absolute(&*p)?;
        }
        Ok(())
    }

    /// Adds `other`'s steps after this one's.
    pub fn extend(&mut self, other: Commit) {
        self.prepare.extend(other.prepare);
        self.remove.extend(other.remove);
        self.rename.extend(other.rename);
        self.write.extend(other.write);
        self.clean.extend(other.clean);
    }

    /// Applies the steps. Applied again after an interruption, it finishes the commit: the
    /// preparation and the removals are done again only while no rename is done (a removed or
    /// set-aside file's name may be a rename's target), renames already done are passed over,
    /// the files are written again, and what is already cleaned is passed over.
    pub fn apply(&self) -> io::Result<()> {
        let abort_after: Option<usize> = std::env::var(ABORT_IN_COMMIT)
            .ok()
            .and_then(|v| v.parse().ok());
        if self.apply_until(abort_after)? {
            // The test hook: a kill at a chosen point, without destructors.
            std::process::abort();
        }
        Ok(())
    }

    /// Applies the steps, or only the first `stop` of them (then returns true).
    fn apply_until(&self, stop: Option<usize>) -> io::Result<bool> {
        let mut done = 0;
        let mut stopped = || {
            let now = stop == Some(done);
            done += 1;
            now
        };
        let renamed = self.rename.iter().any(|(from, _)| !from.exists());
        if !renamed {
            for p in &self.prepare {
                if stopped() {
                    return Ok(true);
                }
                match p {
                    Prepare::Write(path, text) => write_atomically(path, text)?,
                    Prepare::Rename(from, to) => {
                        if from.exists() {
                            if let Some(parent) = to.parent() {
                                fs::create_dir_all(parent)?;
                            }
                            fs::rename(from, to)?;
                        }
                    }
                }
            }
            for p in &self.remove {
                if stopped() {
                    return Ok(true);
                }
                remove_if_there(p)?;
            }
        }
        for (from, to) in &self.rename {
            if stopped() {
                return Ok(true);
            }
            if from.exists() {
                fs::rename(from, to)?;
            } else if !to.exists() {
                return Err(io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("neither {} nor {} exists", from.display(), to.display()),
                ));
            }
        }
        for (path, text) in &self.write {
            if stopped() {
                return Ok(true);
            }
            write_atomically(path, text)?;
        }
        for p in &self.clean {
            if stopped() {
                return Ok(true);
            }
            remove_if_there(p)?;
        }
        Ok(stopped())
    }

    /// Removes the temporary files of a commit that will not be applied.
    pub fn discard(&self) {
        for (from, _) in &self.rename {
            let _ = fs::remove_file(from);
        }
    }
}

/// Removes the file or empty directory `path`, unless it is gone already.
fn remove_if_there(path: &Path) -> io::Result<()> {
    let removed = if path.is_dir() {
        fs::remove_dir(path)
    } else {
        fs::remove_file(path)
    };
    match removed {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Writes `text` to `path` through an [`AtomicFile`].
fn write_atomically(path: &Path, text: &str) -> io::Result<()> {
    let mut out = AtomicFile::create(path)?;
    out.write_all(text.as_bytes())?;
    out.finish()
}

/// Appends `value`, the output of trajectory `id`, to `out` as one JSON line; a value that
/// cannot be serialized is diagnosed for `prov`.
pub fn write_json(
    out: &mut Vec<u8>,
    value: &impl serde::Serialize,
    id: &str,
    prov: &Provenance,
) -> Result<(), Box<Diagnostic>> {
    match serde_json::to_writer(&mut *out, value) {
        Ok(()) => {
            out.push(b'\n');
            Ok(())
        }
        Err(e) => Err(Box::new(Diagnostic::error(
            prov,
            Some(id),
            "",
            "serialize",
            e.to_string(),
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bytes written across several writeback chunks, from a non-zero offset (as a resumed
    /// output is), land where they were written.
    #[test]
    fn a_writeback_file_keeps_what_is_written_across_chunks() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("out");
        fs::write(&path, b"kept:").expect("write the head");
        let mut file = fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .expect("open");
        file.seek(io::SeekFrom::Start(5)).expect("seek");
        let chunk = WRITEBACK_CHUNK as usize;
        let body: Vec<u8> = (0..chunk * 2 + 1000).map(|i| (i % 251) as u8).collect();
        let mut w = BufWriter::with_capacity(4096, WritebackFile::new(file, 5));
        for piece in body.chunks(chunk / 3 + 7) {
            w.write_all(piece).expect("write");
        }
        let w = w.into_inner().map_err(|e| e.into_error()).expect("flush");
        assert_eq!(w.offset, 5 + body.len() as u64);
        // Writeback was started for every full chunk, and only what followed is pending.
        assert!(w.offset - w.pending < WRITEBACK_CHUNK);
        assert!(w.pending >= 5 + WRITEBACK_CHUNK);
        w.file().sync_all().expect("sync");
        let read = fs::read(&path).expect("read");
        assert_eq!(&read[..5], b"kept:");
        assert!(read[5..] == body[..], "the body differs");
    }

    #[test]
    fn file_appears_only_when_finished() {
        let dir = tempfile::tempdir().expect("temp dir");
        let target = dir.path().join("sub/out.jsonl");
        let mut f = AtomicFile::create(&target).expect("create");
        f.write_all(b"hello\n").expect("write");
        assert!(!target.exists());
        f.finish().expect("finish");
        assert_eq!(fs::read(&target).expect("read"), b"hello\n");
        assert_eq!(
            fs::read_dir(target.parent().expect("parent"))
                .expect("dir")
                .count(),
            1
        );
    }

    /// A named pipe stands for `/dev/null` (which a failing test must not replace): it is
    /// written in place and is still a pipe afterwards.
    #[cfg(unix)]
    #[test]
    fn a_pipe_is_written_in_place_not_replaced() {
        use std::os::unix::fs::FileTypeExt;
        let dir = tempfile::tempdir().expect("temp dir");
        let fifo = dir.path().join("pipe");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("mkfifo runs");
        assert!(made.success());
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || fs::read(fifo).expect("read the pipe"))
        };
        let mut out = Output::create(fifo.to_str().expect("utf-8")).expect("open the pipe");
        out.write_all(b"through\n").expect("write");
        out.finish().expect("finish");
        // Checked before joining: a replaced pipe would leave the reader waiting forever.
        let kind = fs::symlink_metadata(&fifo)
            .expect("still there")
            .file_type();
        assert!(kind.is_fifo(), "the pipe was replaced: {kind:?}");
        assert_eq!(reader.join().expect("reader"), b"through\n");
        assert_eq!(fs::read_dir(dir.path()).expect("dir").count(), 1);
    }

    /// A second lock of the same output is refused naming this process; once the first is
    /// released, its file is gone and the output can be locked again.
    #[test]
    fn a_lock_is_exclusive_names_its_holder_and_is_removed_on_release() {
        let dir = tempfile::tempdir().expect("temp dir");
        let out = dir.path().join("out.jsonl");
        let out = out.to_str().expect("utf-8");
        let lock = Lock::file(out).expect("locks").expect("a file");
        let err = Lock::file(out).expect_err("refused");
        assert!(
            err.to_string()
                .contains(&format!("(pid {}: ", std::process::id())),
            "{err}"
        );
        drop(lock);
        assert_eq!(fs::read_dir(dir.path()).expect("dir").count(), 0);
        assert!(Lock::file(out).expect("locks again").is_some());
        assert!(Lock::file("-").expect("stdout").is_none());
    }

    /// A commit applied again after a kill at any step ends as one applied once, even when a
    /// file it removes or sets aside has the name a rename gives.
    #[test]
    fn a_commit_applied_again_after_any_step_completes_it() {
        let dir = tempfile::tempdir().expect("temp dir");
        let p = |n: &str| dir.path().join(n);
        let commit = Commit {
            prepare: vec![
                Prepare::Write(p("card"), "both".to_owned()),
                Prepare::Rename(p("a"), p("aside/a")),
                Prepare::Write(p("card"), "aside".to_owned()),
            ],
            remove: vec![p("old")],
            rename: vec![(p(".a.partial"), p("a")), (p(".b.partial"), p("b"))],
            write: vec![
                (p("manifest"), "m".to_owned()),
                (p("card"), "new".to_owned()),
            ],
            clean: vec![p("aside/a"), p("aside")],
        };
        let mut done = 0;
        loop {
            for (name, text) in [
                ("a", "old a"),
                ("old", "x"),
                (".a.partial", "new a"),
                (".b.partial", "new b"),
                ("card", "old"),
            ] {
                fs::write(p(name), text).expect("write");
            }
            for gone in ["manifest", "b"] {
                let _ = fs::remove_file(p(gone));
            }
            // A kill after `done` steps, then the whole commit again.
            let stopped = commit.apply_until(Some(done)).expect("applies part");
            let card = fs::read_to_string(p("card")).expect("card");
            let a = fs::read_to_string(p("a")).ok();
            let aside = fs::read_to_string(p("aside/a")).ok();
            // What the card names is whole at every step: the old `a`, where it is, or the new.
            match card.as_str() {
                "old" => assert_eq!(a.as_deref(), Some("old a"), "after {done} steps"),
                "both" => assert!(a.or(aside).as_deref() == Some("old a"), "after {done}"),
                "aside" => assert_eq!(aside.as_deref(), Some("old a"), "after {done} steps"),
                _ => assert_eq!(a.as_deref(), Some("new a"), "after {done} steps"),
            }
            commit.apply().expect("applies");
            let mut names: Vec<String> = fs::read_dir(dir.path())
                .expect("dir")
                .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
                .collect();
            names.sort();
            assert_eq!(names, ["a", "b", "card", "manifest"], "after {done} steps");
            assert_eq!(fs::read_to_string(p("a")).expect("a"), "new a");
            assert_eq!(fs::read_to_string(p("card")).expect("card"), "new");
            if !stopped {
                break;
            }
            done += 1;
        }
        assert_eq!(done, 11, "every step was interrupted once");
    }

    #[test]
    fn dropped_unfinished_file_leaves_nothing() {
        let dir = tempfile::tempdir().expect("temp dir");
        let target = dir.path().join("out.jsonl");
        let mut f = AtomicFile::create(&target).expect("create");
        f.write_all(b"partial").expect("write");
        drop(f);
        assert_eq!(fs::read_dir(dir.path()).expect("dir").count(), 0);
    }
}
