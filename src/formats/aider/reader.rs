//! Cutting an Aider chat history into records: one record per session (the lines from one
//! `# aider chat started at` line to the next), read line by line so that memory holds one
//! session at a time. A session with no user turn (Aider was started and left, or only ran
//! commands) makes no record of its own: its lines ride with the session before it (or, before
//! the first session with a turn, the one after it), where the converter counts them as left out.
//! A file with no session that has a turn is one record, which the converter refuses.

use std::collections::VecDeque;
use std::io::{self, BufRead};
use std::sync::Arc;

use crate::ingest::open::open;
use crate::ingest::{FrameError, Provenance, RawRecord, RecordSource};

use super::chunk::Chunk;

/// True when `line` (without its line break) starts a session: `# aider chat started at …`
/// (`# Aider chat started at …` in the earliest versions).
pub fn is_session_header(line: &str) -> bool {
    starts_session(line.as_bytes())
}

/// [`is_session_header`] of a line's bytes (the header is ASCII: bytes that are not UTF-8
/// never match it, in the bytes or in their lossy text).
fn starts_session(line: &[u8]) -> bool {
    line.get(..23)
        .is_some_and(|h| h.eq_ignore_ascii_case(b"# aider chat started at"))
}

/// True when `line` (its bytes, line break included or not) is a user turn that is not a
/// command: `#### ` followed by anything but `/` or `!` (the in-chat commands, which send
/// nothing to the model by themselves) or a confirmation ([`is_confirmation`]). The marks
/// are ASCII, so the bytes are looked at as they are, not made text.
fn is_user_turn(line: &[u8]) -> bool {
    line.strip_prefix(b"#### ").is_some_and(|rest| {
        !rest.starts_with(b"/")
            && !rest.starts_with(b"!")
            && memchr::memmem::find(rest, CONFIRMATION.as_bytes()).is_none()
    })
}

/// What a confirmation's line holds ([`is_confirmation`]).
const CONFIRMATION: &str = "? (Y)es/(N)o";

/// A question Aider answered for the user from an earlier "(A)ll" or "(S)kip all", which it
/// logs as a user line (`Add file to the chat? (Y)es/(N)o/(A)ll/... [Yes]: skip`).
pub fn is_confirmation(text: &str) -> bool {
    text.contains(CONFIRMATION)
}

/// The most room a session starts with.
const MAX_ROOM: usize = 1 << 20;

/// The sessions of one chat history file, a record each.
pub struct SessionRecords {
    input: Option<Box<dyn BufRead + Send>>,
    file: Arc<str>,
    limit: usize,
    /// Lines read so far.
    line: u64,
    bytes_read: u64,
    index: u64,
    /// The session being read.
    current: Option<Chunk>,
    /// The last session with a turn, held back while sessions without one may follow it.
    held: Option<Chunk>,
    /// Sessions without a turn read before any session with one.
    leading: Option<Chunk>,
    ready: VecDeque<RawRecord>,
    /// The line being read (kept: its room is reused).
    buf: Vec<u8>,
    /// The size of the last session read: the room a new one starts with, so that its bytes
    /// are not copied as they grow (sessions of a file are alike).
    room: usize,
}

impl SessionRecords {
    /// Opens `path` (`-` is stdin; gzip and zstd are read through); records hold at most
    /// `limit` bytes.
    pub fn open(path: &str, limit: usize) -> io::Result<SessionRecords> {
        Ok(SessionRecords {
            input: Some(open(path)?),
            file: Arc::from(path),
            limit,
            line: 0,
            bytes_read: 0,
            index: 0,
            current: None,
            held: None,
            leading: None,
            ready: VecDeque::new(),
            buf: Vec::new(),
            room: 0,
        })
    }

    fn record(&mut self, chunk: Chunk) -> RawRecord {
        let index = self.index;
        self.index += 1;
        RawRecord {
            provenance: Provenance {
                input: self.file.clone(),
                file: self.file.clone(),
                line: chunk.line,
                index,
            },
            error: chunk.too_large.map(|size| FrameError::TooLarge {
                size,
                limit: self.limit as u64,
            }),
            bytes: chunk.bytes,
        }
    }

    /// Files the session just read: a session with a turn is held (the one held before goes
    /// out), one without rides with the held session or waits for the first one with a turn.
    fn close(&mut self, chunk: Chunk) {
        self.room = chunk.bytes.len().min(MAX_ROOM);
        if chunk.kept {
            let mut chunk = chunk;
            if let Some(mut leading) = self.leading.take() {
                leading.absorb(chunk, self.limit);
                chunk = leading;
            }
            if let Some(held) = self.held.replace(chunk) {
                let record = self.record(held);
                self.ready.push_back(record);
            }
        } else if let Some(held) = &mut self.held {
            held.absorb(chunk, self.limit);
        } else {
            match &mut self.leading {
                Some(leading) => leading.absorb(chunk, self.limit),
                None => self.leading = Some(chunk),
            }
        }
    }

    /// Reads lines until a record is ready or the input ends.
    fn fill(&mut self) {
        let mut buf = std::mem::take(&mut self.buf);
        while self.ready.is_empty() {
            let Some(input) = self.input.as_mut() else {
                break;
            };
            buf.clear();
            match input.read_until(b'\n', &mut buf) {
                Ok(0) => {
                    self.input = None;
                    if let Some(chunk) = self.current.take() {
                        self.close(chunk);
                    }
                    for chunk in [self.held.take(), self.leading.take()]
                        .into_iter()
                        .flatten()
                    {
                        let record = self.record(chunk);
                        self.ready.push_back(record);
                    }
                }
                Ok(n) => {
                    self.bytes_read += n as u64;
                    self.line += 1;
                    if starts_session(&buf) {
                        if let Some(chunk) = self.current.take() {
                            self.close(chunk);
                        }
                    }
                    let (line, room) = (self.line, self.room);
                    let chunk = self.current.get_or_insert_with(|| Chunk::start(line, room));
                    chunk.kept |= is_user_turn(&buf);
                    chunk.push(&buf, self.limit);
                }
                Err(e) => {
                    self.input = None;
                    let record = RawRecord {
                        provenance: Provenance {
                            input: self.file.clone(),
                            file: self.file.clone(),
                            line: self.line + 1,
                            index: self.index,
                        },
                        bytes: Vec::new(),
                        error: Some(FrameError::Read(e.to_string())),
                    };
                    self.index += 1;
                    self.ready.push_back(record);
                }
            }
        }
        self.buf = buf;
    }
}

impl Iterator for SessionRecords {
    type Item = RawRecord;

    fn next(&mut self) -> Option<RawRecord> {
        self.fill();
        self.ready.pop_front()
    }
}

impl RecordSource for SessionRecords {
    fn bytes_read(&self) -> u64 {
        self.bytes_read
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records(text: &str) -> Vec<(u64, String)> {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join(".aider.chat.history.md");
        std::fs::write(&path, text).expect("write");
        SessionRecords::open(path.to_str().expect("utf-8"), 1 << 20)
            .expect("open")
            .map(|r| {
                (
                    r.provenance.line,
                    String::from_utf8(r.bytes).expect("utf-8"),
                )
            })
            .collect()
    }

    #[test]
    fn sessions_without_a_turn_ride_with_a_session_that_has_one() {
        let text = "\n# aider chat started at 1\n\n> banner  \n\
                    \n# aider chat started at 2\n\n#### hi  \n\nhello\n\n\
                    \n# aider chat started at 3\n\n#### /help  \n\
                    \n# aider chat started at 4\n\n#### again  \n";
        let got = records(text);
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(got[0].0, 1);
        assert!(got[0].1.contains("started at 1") && got[0].1.contains("started at 3"));
        assert!(!got[0].1.contains("started at 4"));
        assert_eq!(got[1].0, 17);
        assert!(got[1].1.starts_with("# aider chat started at 4"));
    }

    #[test]
    fn a_file_without_turns_is_one_record() {
        let got = records("{\"a\": 1}\n{\"b\": 2}\n");
        assert_eq!(got, vec![(1, "{\"a\": 1}\n{\"b\": 2}\n".to_owned())]);
        assert!(records("").is_empty());
    }

    #[test]
    fn headers_are_matched_in_either_case() {
        assert!(is_session_header(
            "# aider chat started at 2025-05-04 17:02:36"
        ));
        assert!(is_session_header(
            "# Aider chat started at 2023-05-12 15:23:26"
        ));
        assert!(!is_session_header("## aider chat started at"));
    }
}
