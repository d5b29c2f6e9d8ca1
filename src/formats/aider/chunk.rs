//! The lines of one record being gathered, shared by the chat-history reader (a session) and
//! the LLM-history reader (a request): its bytes up to the record limit, then a preview only,
//! with the size it would have had.

/// How much of an oversized record a rejection shows.
const PREVIEW: usize = 4096;

/// The lines of one record (or of several, when those that make no record ride along).
#[derive(Default)]
pub(super) struct Chunk {
    pub(super) bytes: Vec<u8>,
    /// The 1-based line it starts on.
    pub(super) line: u64,
    /// It holds what makes a record: a user turn (chat history), a reply (LLM history).
    pub(super) kept: bool,
    /// Its size when it grew past the record limit (its bytes are then a preview).
    pub(super) too_large: Option<u64>,
}

impl Chunk {
    /// A chunk starting on `line`, with room for `room` bytes.
    pub(super) fn start(line: u64, room: usize) -> Chunk {
        Chunk {
            bytes: Vec::with_capacity(room),
            line,
            ..Chunk::default()
        }
    }

    /// Appends `text`; past `limit` bytes only a preview is kept, and the size counted.
    pub(super) fn push(&mut self, text: &[u8], limit: usize) {
        let size = self.size() + text.len() as u64;
        if self.too_large.is_some() || size > limit as u64 {
            self.too_large = Some(size);
            let room = PREVIEW.saturating_sub(self.bytes.len());
            self.bytes.extend_from_slice(&text[..room.min(text.len())]);
        } else {
            self.bytes.extend_from_slice(text);
        }
    }

    /// Its size in bytes, counted past the limit too.
    pub(super) fn size(&self) -> u64 {
        self.too_large.unwrap_or(self.bytes.len() as u64)
    }

    /// `other`'s lines appended to these.
    pub(super) fn absorb(&mut self, other: Chunk, limit: usize) {
        let size = self.size() + other.size();
        self.push(&other.bytes, limit);
        if self.too_large.is_some() || other.too_large.is_some() {
            self.too_large = Some(size);
        }
        self.kept |= other.kept;
    }
}
