//! Aider's log of the requests it sends (`.aider.llm.history`, `--llm-history-file`): every
//! request is `TO LLM <time>` and the messages as the model got them (each message after a
//! `-------` line, before v0.49 after a blank line; each of its lines prefixed with its role:
//! `SYSTEM `, `USER `, `ASSISTANT `), then `LLM RESPONSE <time>` and the reply, each line
//! prefixed `ASSISTANT ` (one blank line when the call failed: a rate limit, an error).
//!
//! One record, and one trajectory, per request that got a reply: its messages as steps, the
//! reply as the last. Requests whose reply is empty are failed attempts: they ride with the
//! request after them (Aider's retry of the same messages; at the end of the file, the request
//! before them), which lists them in `details.aider.failed_attempts` and counts their lines
//! as left out. The mapping is in docs/formats/aider.md.

use std::io::{self, BufRead, Read};
use std::path::Path;
use std::sync::Arc;

use serde_json::{json, Value};

use crate::convert::LeftOut;
use crate::formats::chat::system_step;
use crate::formats::kit::source_details;
use crate::ingest::open::open;
use crate::ingest::{FrameError, Provenance, RawRecord, RecordSource};
use crate::model::{AdpVersion, JsonObject, Source, Step, Trajectory};
use crate::validate::Diagnostic;

use super::chunk::Chunk;
use super::steps::reasoning;

/// What starts a request.
const REQUEST: &str = "TO LLM ";
/// What starts a reply.
const RESPONSE: &str = "LLM RESPONSE ";
/// What comes before each message (since v0.49).
const SEPARATOR: &str = "-------";

/// The kind of a header line and its time.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Header<'a> {
    Request(&'a str),
    Response(&'a str),
}

/// `line` (without its line break) as a header: `TO LLM <time>` or `LLM RESPONSE <time>`,
/// the time as Aider writes it (`2025-05-04T17:06:58`). Any other line is none.
fn header(line: &str) -> Option<Header<'_>> {
    let line = line.trim_end_matches(['\r', '\n']);
    if let Some(t) = line.strip_prefix(REQUEST) {
        return is_time(t).then_some(Header::Request(t));
    }
    let t = line.strip_prefix(RESPONSE)?;
    is_time(t).then_some(Header::Response(t))
}

/// True for `YYYY-MM-DDTHH:MM:SS` (Python's `isoformat(timespec="seconds")`).
fn is_time(t: &str) -> bool {
    let b = t.as_bytes();
    b.len() == 19
        && b.iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b'-',
            10 => *c == b'T',
            13 | 16 => *c == b':',
            _ => c.is_ascii_digit(),
        })
}

/// True when the file at `path` starts as Aider writes its log: `TO LLM <time>`.
pub(super) fn starts_as_log(path: &Path) -> bool {
    let Some(p) = path.to_str() else { return false };
    let Ok(input) = open(p) else { return false };
    let mut first = Vec::new();
    if input.take(64).read_until(b'\n', &mut first).is_err() {
        return false;
    }
    std::str::from_utf8(&first).is_ok_and(|l| matches!(header(l), Some(Header::Request(_))))
}

// ---------------------------------------------------------------------------------------------
// Records

/// The requests of one log, a record per request that got a reply (with the failed attempts
/// around it), read line by line: memory holds two requests at a time.
pub(super) struct Records {
    input: Option<Box<dyn BufRead + Send>>,
    file: Arc<str>,
    limit: usize,
    line: u64,
    bytes_read: u64,
    index: u64,
    /// The request being read, and whether its reply has started.
    current: Option<(Chunk, bool)>,
    /// Failed attempts (and lines before the first request) waiting for a request with a reply.
    pending: Option<Chunk>,
    /// The last request with a reply, held back while failed attempts may end the file.
    held: Option<Chunk>,
    ready: Option<RawRecord>,
}

impl Records {
    /// Opens `path` (gzip and zstd are read through); records hold at most `limit` bytes.
    pub(super) fn open(path: &str, limit: usize) -> io::Result<Records> {
        Ok(Records {
            input: Some(open(path)?),
            file: Arc::from(path),
            limit,
            line: 0,
            bytes_read: 0,
            index: 0,
            current: None,
            pending: None,
            held: None,
            ready: None,
        })
    }

    fn record(&mut self, chunk: Chunk, error: Option<FrameError>) -> RawRecord {
        let index = self.index;
        self.index += 1;
        let error = error.or(chunk.too_large.map(|size| FrameError::TooLarge {
            size,
            limit: self.limit as u64,
        }));
        RawRecord {
            provenance: Provenance {
                input: self.file.clone(),
                file: self.file.clone(),
                line: chunk.line,
                index,
            },
            error,
            bytes: chunk.bytes,
        }
    }

    /// Files the request just read: one with a reply is held (with the attempts before it;
    /// the one held before goes out), one without waits for the next with a reply.
    fn close(&mut self, chunk: Chunk) {
        if chunk.kept {
            let chunk = match self.pending.take() {
                Some(mut before) => {
                    before.absorb(chunk, self.limit);
                    before
                }
                None => chunk,
            };
            if let Some(held) = self.held.replace(chunk) {
                self.ready = Some(self.record(held, None));
            }
        } else {
            match &mut self.pending {
                Some(p) => p.absorb(chunk, self.limit),
                None => self.pending = Some(chunk),
            }
        }
    }

    /// The end of the input: the held request takes the failed attempts after it.
    fn finish(&mut self) -> Option<RawRecord> {
        if let Some((chunk, _)) = self.current.take() {
            self.close(chunk);
            if self.ready.is_some() {
                // The last request went into `held`; the one before it is out first.
                return self.ready.take();
            }
        }
        let last = match (self.held.take(), self.pending.take()) {
            (Some(mut held), Some(after)) => {
                held.absorb(after, self.limit);
                held
            }
            (Some(only), None) | (None, Some(only)) => only,
            (None, None) => return None,
        };
        Some(self.record(last, None))
    }

    fn fill(&mut self) -> Option<RawRecord> {
        let mut buf = Vec::new();
        loop {
            if let Some(r) = self.ready.take() {
                return Some(r);
            }
            let Some(input) = self.input.as_mut() else {
                return self.finish();
            };
            buf.clear();
            match input.read_until(b'\n', &mut buf) {
                Ok(0) => self.input = None,
                Ok(n) => {
                    self.bytes_read += n as u64;
                    self.line += 1;
                    let head = std::str::from_utf8(&buf).ok().and_then(header);
                    if let Some(Header::Request(_)) = head {
                        if let Some((chunk, _)) = self.current.take() {
                            self.close(chunk);
                        }
                    }
                    let line = self.line;
                    let (chunk, replying) = self.current.get_or_insert_with(|| {
                        (
                            Chunk {
                                line,
                                ..Chunk::default()
                            },
                            false,
                        )
                    });
                    if let Some(Header::Response(_)) = head {
                        *replying = true;
                    } else if *replying && !buf.trim_ascii().is_empty() {
                        chunk.kept = true;
                    }
                    chunk.push(&buf, self.limit);
                }
                Err(e) => {
                    self.input = None;
                    let at = Chunk {
                        line: self.line + 1,
                        ..Chunk::default()
                    };
                    return Some(self.record(at, Some(FrameError::Read(e.to_string()))));
                }
            }
        }
    }
}

impl Iterator for Records {
    type Item = RawRecord;

    fn next(&mut self) -> Option<RawRecord> {
        self.fill()
    }
}

impl RecordSource for Records {
    fn bytes_read(&self) -> u64 {
        self.bytes_read
    }
}

// ---------------------------------------------------------------------------------------------
// Parsing a record

/// One line of a record: its 1-based number in the file and its text.
type Line<'a> = (u64, &'a str);

/// A request: its header's line and time, its message lines, and its reply.
struct Request<'a> {
    line: u64,
    sent_at: &'a str,
    messages: Vec<Line<'a>>,
    replied_at: Option<&'a str>,
    reply: Vec<Line<'a>>,
}

impl Request<'_> {
    /// The reply's text: its lines without their `ASSISTANT ` prefix. `None` when empty.
    fn reply_text(&self) -> Option<String> {
        let text = self
            .reply
            .iter()
            .map(|(_, l)| strip_role(l, "ASSISTANT").unwrap_or(l))
            .collect::<Vec<_>>()
            .join("\n");
        (!text.trim().is_empty()).then_some(text)
    }

    fn lines(&self) -> u64 {
        (2 + self.messages.len() + self.reply.len()) as u64
    }
}

/// The requests of `text` (starting on line `first`), and the lines before the first.
fn requests(text: &str, first: u64) -> (Vec<Request<'_>>, Vec<Line<'_>>) {
    let mut out: Vec<Request<'_>> = Vec::new();
    let mut before = Vec::new();
    for (i, l) in text.lines().enumerate() {
        let at = first + i as u64;
        match (header(l), out.last_mut()) {
            (Some(Header::Request(t)), _) => out.push(Request {
                line: at,
                sent_at: t,
                messages: Vec::new(),
                replied_at: None,
                reply: Vec::new(),
            }),
            (Some(Header::Response(t)), Some(r)) if r.replied_at.is_none() => {
                r.replied_at = Some(t);
            }
            (_, Some(r)) if r.replied_at.is_some() => r.reply.push((at, l)),
            (_, Some(r)) => r.messages.push((at, l)),
            (_, None) => before.push((at, l)),
        }
    }
    (out, before)
}

/// `line` without the prefix `role ` (or `role` alone: the empty line of a message whose
/// trailing space was trimmed).
fn strip_role<'a>(line: &'a str, role: &str) -> Option<&'a str> {
    let rest = line.strip_prefix(role)?;
    if rest.is_empty() {
        Some("")
    } else {
        rest.strip_prefix(' ')
    }
}

/// The role a message line starts with: a word of capital letters before a space (`USER`).
fn role_of(line: &str) -> Option<&str> {
    let word = line.split(' ').next()?;
    (!word.is_empty() && word.bytes().all(|b| b.is_ascii_uppercase())).then_some(word)
}

/// One message of a request.
struct Message<'a> {
    line: u64,
    role: &'a str,
    text: String,
    images: Vec<String>,
}

/// The messages of a request's lines: after each `-------` (since v0.49), or between blank
/// lines (before); how many the request holds, and how many of them have no line (an empty
/// content: Aider writes nothing of it, not even its role), which make no message.
fn messages<'a>(lines: &[Line<'a>], left: &mut LeftOut) -> (Vec<Message<'a>>, u64, u64) {
    let dashed = lines.first().is_none_or(|(_, l)| !l.trim().is_empty());
    let mut groups: Vec<Vec<Line<'a>>> = Vec::new();
    for &(at, l) in lines {
        let separator = if dashed {
            l == SEPARATOR
        } else {
            l.trim().is_empty()
        };
        match groups.last_mut() {
            Some(g) if !separator => g.push((at, l)),
            None if !separator => groups.push(vec![(at, l)]),
            _ => groups.push(Vec::new()),
        }
    }
    let all = groups.len() as u64;
    let empty = groups.iter().filter(|g| g.is_empty()).count() as u64;
    let read = groups.iter().filter_map(|g| message(g, left)).collect();
    (read, all, empty)
}

/// One message's lines as a message: a string content (every line prefixed with the role), or
/// a list of parts (`ROLE type: text`, `ROLE text: …` whose later lines are not prefixed,
/// `ROLE Image_url URL: …`, `ROLE cache_control: …`; before v0.49 only `ROLE Image URL: …`).
fn message<'a>(lines: &[Line<'a>], left: &mut LeftOut) -> Option<Message<'a>> {
    let &(line, first) = lines.first()?;
    let Some(role) = role_of(first) else {
        left.wrong_type(
            line,
            "",
            "a message whose first line does not start with a role (`SYSTEM `, `USER `, `ASSISTANT `)",
        );
        left.lines += lines.len() as u64 - 1;
        return None;
    };
    let body: Vec<&str> = lines
        .iter()
        .map(|(_, l)| strip_role(l, role).unwrap_or(l))
        .collect();
    let mut m = Message {
        line,
        role,
        text: String::new(),
        images: Vec::new(),
    };
    if body[0].starts_with("type: ") {
        parts(&body, &mut m);
    } else {
        let mut text = Vec::with_capacity(body.len());
        for l in body {
            match l
                .strip_prefix("Image URL: ")
                .or(l.strip_prefix("Image_url URL: "))
            {
                Some(url) => m.images.push(url.to_owned()),
                None => text.push(l),
            }
        }
        m.text = text.join("\n");
    }
    Some(m)
}

/// The parts of a list content, as Aider writes each part's keys: `type: text` then
/// `text: …` (the text's later lines unprefixed), an image's `Image_url URL: …`, and
/// `cache_control: …` (Anthropic's prompt-caching mark, not content). Other keys stay text.
fn parts(body: &[&str], m: &mut Message<'_>) {
    let mut texts: Vec<String> = Vec::new();
    let mut in_text = false;
    for l in body {
        if let Some(t) = l.strip_prefix("text: ") {
            texts.push(t.to_owned());
            in_text = true;
        } else if let Some(url) = l.strip_prefix("Image_url URL: ") {
            m.images.push(url.to_owned());
            in_text = false;
        } else if l.starts_with("type: ") || l.starts_with("cache_control: ") {
            in_text = false;
        } else if let (true, Some(t)) = (in_text, texts.last_mut()) {
            t.push('\n');
            t.push_str(l);
        } else {
            texts.push((*l).to_owned());
        }
    }
    m.text = texts.join("\n\n");
}

/// The steps of a request's messages: a system message as the `system` observation (as the
/// chat readers keep it), a user message as the user's text (and its images), an assistant
/// message as a message action; another role as an observation named by it.
fn step_of(m: Message<'_>, out: &mut Vec<Step>, left: &mut LeftOut) {
    match m.role {
        "SYSTEM" | "DEVELOPER" => out.push(system_step(m.text)),
        "USER" => {
            if !m.text.is_empty() || m.images.is_empty() {
                out.push(Step::user_text(m.text));
            }
            out.extend(m.images.into_iter().map(|u| Step::image(u, Source::User)));
        }
        "ASSISTANT" => out.push(Step::message(m.text, None)),
        other => {
            left.unmapped(
                m.line,
                "",
                format!("a message of role {other}, which Aider does not send: kept as an observation named by it"),
            );
            out.push(Step::environment_text(Some(other.to_lowercase()), m.text));
        }
    }
}

/// The trajectory of a record: its request with a reply, the failed attempts around it.
pub(super) fn convert(
    record: &RawRecord,
) -> Result<Vec<(Trajectory, AdpVersion)>, Vec<Diagnostic>> {
    let refuse =
        |rule: &str, why: String| vec![Diagnostic::error(&record.provenance, None, "", rule, why)];
    let text = std::str::from_utf8(&record.bytes).map_err(|e| {
        refuse(
            "not-utf8",
            format!(
                "the request is not UTF-8 text (invalid bytes at offset {})",
                e.valid_up_to()
            ),
        )
    })?;
    let (requests, before) = requests(text, record.provenance.line);
    let mut left = LeftOut::new("details.aider");
    if let Some(&(line, _)) = before.first() {
        left.wrong_type(
            line,
            "",
            "lines before the log's first `TO LLM <time>` request",
        );
        left.lines += before.len() as u64 - 1;
    }
    let Some(answered) = requests.iter().rposition(|r| r.reply_text().is_some()) else {
        return Err(if requests.is_empty() {
            refuse("not-a-unit", "not an Aider LLM history: no `TO LLM <time>` request (use --from aider on a .aider.llm.history file)".to_owned())
        } else {
            refuse(
                "empty-trajectory",
                format!(
                    "no request here got a reply ({} request(s), each reply empty: failed calls)",
                    requests.len()
                ),
            )
        });
    };
    let r = &requests[answered];
    let mut failed = Vec::new();
    for (i, f) in requests.iter().enumerate() {
        if i != answered {
            left.lines += f.lines();
            failed.push(json!({"line": f.line, "sent_at": f.sent_at, "replied_at": f.replied_at}));
        }
    }
    let (msgs, in_request, empty) = messages(&r.messages, &mut left);
    let in_source = in_request + 1;
    let kept = msgs.len() as u64 + 1;
    let mut content = Vec::with_capacity(msgs.len() + 1);
    for m in msgs {
        step_of(m, &mut content, &mut left);
    }
    let reply = r.reply_text().unwrap_or_default();
    let lines: Vec<&str> = reply.split('\n').collect();
    let after = reasoning(&lines).and_then(|(thought, n)| Some((thought, lines.get(n..)?)));
    let step = match after {
        // A reply of reasoning alone keeps its text as Aider logged it.
        Some((thought, rest)) if rest.iter().any(|l| !l.trim().is_empty()) => {
            let mut s = Step::message(rest.join("\n"), None);
            s.set_thought(None, Some(thought));
            s
        }
        _ => Step::message(reply, None),
    };
    content.push(step);
    left.messages = Some((in_source, kept));

    let mut source = source_details("aider", record, json!({"sent_at": r.sent_at}));
    if let Some(o) = source.as_object_mut() {
        o.insert("line".into(), r.line.into());
    }
    left.add_to(&mut source);
    let mut aider = JsonObject::new();
    aider.insert("log".into(), "llm_history".into());
    aider.insert("sent_at".into(), r.sent_at.into());
    aider.insert("replied_at".into(), r.replied_at.into());
    if empty > 0 {
        aider.insert("empty_messages".into(), empty.into());
    }
    if !failed.is_empty() {
        aider.insert("failed_attempts".into(), Value::Array(failed));
    }
    let mut details = JsonObject::new();
    details.insert("source".into(), source);
    details.insert("aider".into(), Value::Object(aider));
    let id = format!("aider-llm-{}", r.sent_at);
    Ok(vec![(
        Trajectory::new(id, content, details),
        AdpVersion::V1_5,
    )])
}

#[cfg(test)]
mod tests {
    use super::*;

    const T1: &str = "2025-01-02T03:04:05";

    /// The records of `text`: their first line and text.
    fn records(text: &str) -> Vec<(u64, String)> {
        let dir = tempfile::tempdir().expect("dir"); // ok: test code
        let path = dir.path().join(".aider.llm.history");
        std::fs::write(&path, text).expect("write"); // ok: test code
        Records::open(path.to_str().expect("utf-8"), 1 << 20) // ok: test code
            .expect("open") // ok: test code
            .map(|r| {
                assert!(r.error.is_none());
                let text = String::from_utf8(r.bytes).expect("utf-8"); // ok: test code
                (r.provenance.line, text)
            })
            .collect()
    }

    /// A request of one user message `ask`, its reply `reply` (empty: a failed call).
    fn request(ask: &str, reply: &str) -> String {
        let body = if reply.is_empty() {
            "\n".to_owned()
        } else {
            format!("ASSISTANT {reply}\n")
        };
        format!("TO LLM {T1}\n-------\nUSER {ask}\nLLM RESPONSE {T1}\n{body}")
    }

    fn record(bytes: &[u8]) -> RawRecord {
        RawRecord {
            provenance: Provenance {
                input: "x.aider.llm.history".into(),
                file: "x.aider.llm.history".into(),
                line: 1,
                index: 0,
            },
            bytes: bytes.to_vec(),
            error: None,
        }
    }

    fn convert_text(text: &str) -> Result<Vec<(Trajectory, AdpVersion)>, Vec<Diagnostic>> {
        convert(&record(text.as_bytes()))
    }

    fn trajectory(text: &str) -> Value {
        let out = convert_text(text).expect("converts"); // ok: test code
        assert_eq!(out.len(), 1);
        serde_json::to_value(&out[0].0).expect("json") // ok: test code
    }

    /// The steps of trajectory `t`.
    fn steps_of(t: &Value) -> &[Value] {
        t["content"].as_array().expect("steps") // ok: test code
    }

    #[test]
    fn headers_need_aiders_time() {
        assert_eq!(header(&format!("TO LLM {T1}")), Some(Header::Request(T1)));
        assert_eq!(
            header(&format!("LLM RESPONSE {T1}\r\n")),
            Some(Header::Response(T1))
        );
        for not in [
            "TO LLM yesterday",
            "TO LLM 2025-01-02 03:04:05",
            "USER TO LLM 2025-01-02T03:04:05",
            "TO LLM 2025-01-02T03:04:05Z",
            "",
        ] {
            assert_eq!(header(not), None, "{not}");
        }
    }

    #[test]
    fn failed_attempts_ride_with_the_next_request_that_got_a_reply_or_the_last() {
        let a = request("one", "first");
        let b = request("two", "");
        let c = request("two", "second");
        let d = request("three", "");
        let got = records(&format!("{a}{b}{c}{d}"));
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(got[0], (1, a.clone()));
        assert_eq!(got[1], (6, format!("{b}{c}{d}")));
        // Lines before the first request ride with it; a log of failed calls is one record.
        let got = records(&format!("junk\n{b}{d}"));
        assert_eq!(got, vec![(1, format!("junk\n{b}{d}"))]);
        assert!(records("").is_empty());
    }

    #[test]
    fn a_request_becomes_its_messages_and_the_reply() {
        let text = format!(
            "TO LLM {T1}\n-------\nSYSTEM Be brief.\nSYSTEM \nSYSTEM Use Python.\n-------\n\
             USER fix it\nUSER\n-------\nASSISTANT Ok.\n-------\nUSER go on\n\
             LLM RESPONSE 2025-01-02T03:04:09\nASSISTANT <think>\nASSISTANT why\n\
             ASSISTANT </think>\nASSISTANT \nASSISTANT Done.\nASSISTANT \n"
        );
        let t = trajectory(&text);
        assert_eq!(t["id"], format!("aider-llm-{T1}"));
        let steps = steps_of(&t);
        let texts: Vec<&str> = steps.iter().filter_map(|s| s["content"].as_str()).collect();
        assert_eq!(
            texts,
            [
                "Be brief.\n\nUse Python.",
                "fix it\n",
                "Ok.",
                "go on",
                "Done.\n"
            ]
        );
        assert_eq!(steps[0]["name"], "system");
        assert_eq!(steps[1]["source"], "user");
        assert_eq!(steps[2]["class_"], "message_action");
        assert_eq!(steps[4]["reasoning_content"], "why");
        let aider = &t["details"]["aider"];
        assert_eq!(aider["sent_at"], T1);
        assert_eq!(aider["replied_at"], "2025-01-02T03:04:09");
        // Every message kept: nothing left out to say.
        assert!(t["details"]["source"]["left_out"].is_null());
    }

    #[test]
    fn list_contents_images_and_the_first_versions_layout() {
        // Since v0.49: a list content's keys, the text's later lines unprefixed.
        let text = format!(
            "TO LLM {T1}\n-------\nUSER type: text\nUSER text: see\n\nthis\nUSER type: image_url\n\
             USER Image_url URL: data:image/png;base64,AA\nUSER cache_control: {{'type': 'ephemeral'}}\n\
             -------\n-------\nUSER and?\nLLM RESPONSE {T1}\nASSISTANT A cat.\n"
        );
        let t = trajectory(&text);
        let steps = steps_of(&t);
        let classes: Vec<&str> = steps.iter().filter_map(|s| s["class_"].as_str()).collect();
        assert_eq!(
            classes,
            [
                "text_observation",
                "image_observation",
                "text_observation",
                "message_action"
            ]
        );
        assert_eq!(steps[0]["content"], "see\n\nthis");
        assert_eq!(steps[1]["content"], "data:image/png;base64,AA");
        assert_eq!(t["details"]["aider"]["empty_messages"], 1);
        // Before v0.49: messages between blank lines, an image as `Image URL:`.
        let text = format!(
            "TO LLM {T1}\n\nSYSTEM Be brief.\n\nUSER look\n\nUSER Image URL: http://x/a.png\n\
             LLM RESPONSE {T1}\nASSISTANT Seen.\n"
        );
        let t = trajectory(&text);
        let steps = steps_of(&t);
        assert_eq!(steps.len(), 4);
        assert_eq!(steps[2]["class_"], "image_observation");
        assert_eq!(steps[3]["content"], "Seen.");
    }

    #[test]
    fn what_cannot_be_read_is_counted_or_refused_never_a_panic() {
        // A message without a role and lines before the first request: counted.
        let text = format!(
            "stray\nTO LLM {T1}\n-------\nhello\n-------\nTOOL result\n-------\nUSER q\n\
             LLM RESPONSE {T1}\nASSISTANT a\n"
        );
        let t = trajectory(&text);
        let left = &t["details"]["source"]["left_out"];
        assert_eq!(left["wrong_typed"], 2, "{left}");
        assert_eq!(left["values"], 1, "{left}");
        assert_eq!(left["messages"], serde_json::json!({"in": 4, "kept": 3}));
        let steps = steps_of(&t);
        assert_eq!(steps[0]["name"], "tool");
        // Nothing answered, nothing requested, not UTF-8: refused with a rule.
        let rule = |text: &[u8]| match convert(&record(text)) {
            Err(d) => d[0].rule.clone(),
            Ok(_) => "converted".to_owned(),
        };
        assert_eq!(rule(request("q", "").as_bytes()), "empty-trajectory");
        assert_eq!(rule(b"just text\n"), "not-a-unit");
        assert_eq!(rule(b"TO LLM 2025-01-02T03:04:05\n\xff\n"), "not-utf8");
        for odd in [
            format!("TO LLM {T1}\n"),
            format!("TO LLM {T1}\nLLM RESPONSE {T1}\nLLM RESPONSE {T1}\nASSISTANT x\n"),
            format!("TO LLM {T1}\n-------\n-------\nLLM RESPONSE {T1}\nASSISTANT x\n"),
            format!("TO LLM {T1}\n-------\nUSER type: text\nLLM RESPONSE {T1}\nASSISTANT\n"),
        ] {
            let _ = convert_text(&odd);
        }
    }
}
