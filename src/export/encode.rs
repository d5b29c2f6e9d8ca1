//! Encoding: one trajectory into a row of the target. [`export_record`] and
//! [`export_trajectory`] parse, upgrade and check, filter, encode and assign the split
//! ([`Outcome`]); [`encode_any`] renders a JSON line (an SFT record, or the trajectory for
//! `adp`), a Parquet row or a token row, as the target says; with `--dedup` each row
//! carries the hash of its content without the id. With a chat template and tokenizer
//! ([`ExportOptions::training`]), [`count_tokens`] counts each row's tokens as `stats` does;
//! the exports of a run count a trajectory once where they count alike ([`SharedCounts`]).

use std::borrow::Cow;
use std::cell::RefCell;

use super::conversation::{self, Conversation};
use super::filter::Filtered;
use super::hf;
use super::openai;
use super::options::Thoughts;
use super::render::content_hash;
pub use super::render::{sample_error, with_conversation, Encoded, RenderError};
use super::settings::ExportOptions;
use super::sharegpt;
use super::target::Target;
use super::tokens::{encode_tokens, TokenRow};
use super::tools::ToolSpec;
use crate::ingest::{Provenance, RawRecord};
use crate::model::Trajectory;
use crate::validate::check::upgrade_checked;
use crate::validate::{check_adp, Diagnostic};

impl Encoded<AnyRow> {
    /// The row, and the same counts around a row of nothing (to put another row in with
    /// [`Encoded::with_row`]).
    pub fn take_row(self) -> (AnyRow, Encoded<()>) {
        let Encoded {
            row,
            len,
            hash,
            tokens,
        } = self;
        (
            row,
            Encoded {
                row: (),
                len,
                hash,
                tokens,
            },
        )
    }
}

/// What export made of one trajectory.
pub enum Outcome<R> {
    /// A row, and its split.
    Row(usize, Encoded<R>),
    /// Filtered out.
    Filtered(Filtered),
    /// Rejected.
    Rejected(Vec<Diagnostic>),
}

/// Turns an accepted trajectory into a row of the target; given a borrowed one, a target that
/// needs its own copy (the SFT targets) clones it, and Parquet does not.
pub type Encode<'a, R> =
    dyn Fn(Cow<'_, Trajectory>, &ExportOptions) -> Result<Encoded<R>, RenderError> + 'a;

/// An [`Encode`] that threads share.
pub type Encoder<R> =
    dyn Fn(Cow<'_, Trajectory>, &ExportOptions) -> Result<Encoded<R>, RenderError> + Sync;

/// Exports one ADP record (any version): parse, then [`export_trajectory`] each trajectory.
pub fn export_record<R>(
    record: &RawRecord,
    opts: &ExportOptions,
    encode: &Encoder<R>,
) -> Vec<Outcome<R>> {
    match check_adp(record).into_result() {
        Ok((traj, _)) => vec![export_trajectory(traj, &record.provenance, opts, encode)],
        Err(d) => vec![Outcome::Rejected(d)],
    }
}

/// Exports one trajectory: upgrade to 1.5.0 and check, filter, then `encode`, and assign the
/// split. `prov` locates it for diagnostics.
pub fn export_trajectory<R>(
    mut traj: Trajectory,
    prov: &Provenance,
    opts: &ExportOptions,
    encode: &Encode<'_, R>,
) -> Outcome<R> {
    if let Err(d) = upgrade_checked(&mut traj, prov, &opts.upgrade) {
        return Outcome::Rejected(d);
    }
    export_upgraded(Cow::Owned(traj), prov, opts, encode)
}

/// [`export_trajectory`] of a trajectory already upgraded and checked with `opts.upgrade`.
pub fn export_upgraded<R>(
    traj: Cow<'_, Trajectory>,
    prov: &Provenance,
    opts: &ExportOptions,
    encode: &Encode<'_, R>,
) -> Outcome<R> {
    if let Some(f) = opts.filters.check(&traj) {
        return Outcome::Filtered(f);
    }
    let id = traj.id.clone();
    // A segment goes to its trajectory's split: a session never straddles two.
    let split = opts.splits.assign(crate::segment::trajectory_of(&traj));
    let diagnose = |rule: &str, pointer: &str, message: String| {
        Outcome::Rejected(vec![Diagnostic::error(
            prov,
            Some(&id),
            pointer,
            rule,
            message,
        )])
    };
    match encode(traj, opts) {
        Ok(row) => Outcome::Row(split, row),
        // Nothing to learn is no fault of the data (a session cut off before the agent
        // answered): filtered and counted, where a malformed conversation is rejected.
        Err(RenderError::Untrainable(u)) if u.rule == conversation::NO_ASSISTANT_TURN => {
            Outcome::Filtered(Filtered::NoAssistantTurn)
        }
        Err(RenderError::Untrainable(u)) => diagnose(u.rule, &u.pointer, u.message),
        Err(RenderError::Json(e)) => diagnose("serialize", "", e.to_string()),
        Err(RenderError::Template(m)) => diagnose("chat-template", "", m),
        Err(RenderError::Skipped(f)) => Outcome::Filtered(f),
    }
}

/// A row of any target: what [`encode_any`] makes, for passes that fan one trajectory out to
/// exports of several targets (`trajkit run`).
pub enum AnyRow {
    /// A JSON line (SFT targets and `adp`).
    Line(Vec<u8>),
    /// A Parquet row.
    Parquet(Box<crate::parquet::Row>),
    /// A pre-tokenized row (`tokens`).
    Tokens(Box<TokenRow>),
}

/// Encodes a row of `opts.target`, whichever it is; its token count may be one `share`d by
/// another export of the run.
pub fn encode_any(
    traj: Cow<'_, Trajectory>,
    opts: &ExportOptions,
    share: Option<Share<'_>>,
) -> Result<Encoded<AnyRow>, RenderError> {
    Ok(match opts.target {
        Target::Parquet => {
            let e = parquet_row(traj, opts, share)?;
            Encoded {
                row: AnyRow::Parquet(Box::new(e.row)),
                len: e.len,
                hash: e.hash,
                tokens: e.tokens,
            }
        }
        Target::Tokens => {
            let e = encode_tokens(traj, opts)?;
            Encoded {
                row: AnyRow::Tokens(Box::new(e.row)),
                len: e.len,
                hash: e.hash,
                tokens: e.tokens,
            }
        }
        _ => {
            let e = line_row(traj, opts, share)?;
            Encoded {
                row: AnyRow::Line(e.row),
                len: e.len,
                hash: e.hash,
                tokens: e.tokens,
            }
        }
    })
}

/// The `--dedup` hash of a trajectory: of its JSON with the id left out.
fn trajectory_hash(traj: &mut Trajectory) -> Result<[u8; 16], serde_json::Error> {
    let id = std::mem::take(&mut traj.id);
    let body = serde_json::to_vec(&*traj);
    traj.id = id;
    Ok(content_hash(&body?))
}

/// Encodes a JSON-lines row: an SFT record, or the trajectory itself for `adp`, with its token
/// count maybe `share`d.
///
/// The body is rendered into a per-thread scratch buffer and copied out once into a line of
/// exactly its size: the rows of a batch wait for their turn to be written, so a buffer grown while
/// rendering (or a generous first capacity) would be held that long for each of them.
fn line_row(
    traj: Cow<'_, Trajectory>,
    opts: &ExportOptions,
    share: Option<Share<'_>>,
) -> Result<Encoded<Vec<u8>>, RenderError> {
    thread_local! {
        static BODY: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    let mut traj = traj;
    let id = traj.id.clone();
    BODY.with_borrow_mut(|body| {
        body.clear();
        let mut tokens = None;
        let (with_id, hash) = if opts.target == Target::Adp {
            // Written from a borrowed trajectory; hashing blanks the id for a moment, so a
            // borrowed one is copied only for --dedup.
            let hash = opts
                .dedup
                .then(|| trajectory_hash(traj.to_mut()))
                .transpose()?;
            serde_json::to_writer(&mut *body, &*traj)?;
            (false, hash)
        } else {
            // Rendering takes the trajectory's steps apart: a borrowed one's are copied.
            tokens = render_sft(traj, opts, body, share)?;
            // OpenAI's format has no id key; the others carry it first.
            (
                opts.target.writes_id(),
                opts.dedup.then(|| content_hash(body)),
            )
        };
        // OpenAI documents no key besides its own (docs/training.md): its rows carry no count.
        let n_tokens = tokens.filter(|_| opts.target.writes_n_tokens());
        let row = line(with_id.then_some(id.as_str()), n_tokens, body);
        // A scratch buffer grown by one huge record is not kept for the rest of the run.
        if body.capacity() > SCRATCH_KEEP {
            *body = Vec::new();
        }
        Ok(Encoded {
            len: row.len() as u64,
            row,
            hash,
            tokens,
        })
    })
}

/// The largest scratch buffer [`line_row`] keeps between rows.
const SCRATCH_KEEP: usize = 4 << 20;

/// Encodes a Parquet row, with its token count maybe `share`d.
fn parquet_row(
    traj: Cow<'_, Trajectory>,
    opts: &ExportOptions,
    share: Option<Share<'_>>,
) -> Result<Encoded<crate::parquet::Row>, RenderError> {
    let mut traj = traj;
    // Hashing blanks the id for a moment: a borrowed trajectory is copied only then.
    let hash = opts
        .dedup
        .then(|| trajectory_hash(traj.to_mut()))
        .transpose()?;
    let mut row = crate::parquet::Row::new(&traj)?;
    let mut tokens = None;
    if opts.training.is_some() {
        // Counting builds the conversation, which takes the steps apart (a borrowed
        // trajectory's are copied).
        tokens = with_conversation(traj, &opts.sft, |conv, tools| {
            count_sharing(conv, tools, opts, share)
        })?;
        if let Some(n) = tokens {
            row = row.with_n_tokens(i32::try_from(n).unwrap_or(i32::MAX));
        }
    }
    Ok(Encoded {
        len: row.bytes,
        row,
        hash,
        tokens,
    })
}

/// The tokens of `conv` with `tools` under `opts.training` (the conversation rendered whole
/// by the chat template, no generation prompt, and tokenized: `Training::count`), or `None`
/// when the export counts no tokens. A template that fails is [`RenderError::Template`].
pub fn count_tokens(
    conv: &Conversation,
    tools: &[ToolSpec<'_>],
    opts: &ExportOptions,
) -> Result<Option<u64>, RenderError> {
    count_sharing(conv, tools, opts, None)
}

/// [`count_tokens`], taking the count from `share` when an export like this one made it, and
/// leaving it there for the next.
fn count_sharing(
    conv: &Conversation,
    tools: &[ToolSpec<'_>],
    opts: &ExportOptions,
    share: Option<Share<'_>>,
) -> Result<Option<u64>, RenderError> {
    let Some(training) = opts.training.as_deref() else {
        return Ok(None);
    };
    let key = share.map(|s| {
        let thoughts = conv.has_thoughts().then_some(opts.sft.thoughts);
        (s.counts, (s.like, thoughts))
    });
    if let Some(n) = key.and_then(|(counts, key)| counts.get(key)) {
        return Ok(Some(n));
    }
    let n = training
        .count(conv, tools, &opts.sft)
        .map_err(sample_error)? as u64;
    if let Some((counts, key)) = key {
        counts.put(key, n);
    }
    Ok(Some(n))
}

/// The token counts of one trajectory that the exports of a run share (`trajkit run`, on the
/// thread that exports the trajectory): an export takes the count of an earlier one that
/// counts like it ([`ExportOptions::counts_like`]) when the two place thoughts alike or the
/// conversation has none, instead of rendering and tokenizing it again.
#[derive(Default)]
pub struct SharedCounts(RefCell<Vec<(CountKey, u64)>>);

/// The first export of the run that counts like an export, and where thoughts go when the
/// conversation has any.
type CountKey = (usize, Option<Thoughts>);

impl SharedCounts {
    fn get(&self, key: CountKey) -> Option<u64> {
        let counts = self.0.borrow();
        counts.iter().find(|(k, _)| *k == key).map(|(_, n)| *n)
    }

    fn put(&self, key: CountKey, n: u64) {
        self.0.borrow_mut().push((key, n));
    }
}

/// An export's part in [`SharedCounts`].
#[derive(Clone, Copy)]
pub struct Share<'a> {
    /// The trajectory's counts.
    pub counts: &'a SharedCounts,
    /// The first export of the run that counts like this one (maybe itself).
    pub like: usize,
}

/// An SFT record body (a JSON object without the id), and its tokens when the export counts
/// them.
fn render_sft(
    traj: Cow<'_, Trajectory>,
    opts: &ExportOptions,
    body: &mut Vec<u8>,
    share: Option<Share<'_>>,
) -> Result<Option<u64>, RenderError> {
    let sft = &opts.sft;
    with_conversation(traj, sft, |conv, tools| {
        match opts.target {
            Target::Openai => openai::render(conv, tools, sft, body)?,
            Target::Hf => hf::render(conv, tools, sft, body)?,
            _ => sharegpt::render(conv, tools, sft, body).map_err(|e| match e {
                sharegpt::Error::Untrainable(u) => RenderError::Untrainable(u),
                sharegpt::Error::Json(e) => RenderError::Json(e),
            })?,
        }
        count_sharing(conv, tools, opts, share)
    })
}

/// The JSON line of a row, at exactly its size: `{"id":…,` (with an `id`) and `"n_tokens":…,`
/// (with a count) before the body's members.
fn line(id: Option<&str>, n_tokens: Option<u64>, body: &[u8]) -> Vec<u8> {
    if id.is_none() && n_tokens.is_none() {
        let mut out = Vec::with_capacity(body.len() + 1);
        out.extend_from_slice(body);
        out.push(b'\n');
        return out;
    }
    let members = body.get(1..).unwrap_or_default();
    let mut head = Vec::with_capacity(32);
    if let Some(id) = id {
        head.extend_from_slice(b"\"id\":");
        // A string always serializes.
        let _ = serde_json::to_writer(&mut head, id);
    }
    if let Some(n) = n_tokens {
        if !head.is_empty() {
            head.push(b',');
        }
        head.extend_from_slice(format!("\"n_tokens\":{n}").as_bytes());
    }
    // `{`, the head, `,`, the members, `\n`.
    let mut out = Vec::with_capacity(1 + head.len() + 1 + members.len() + 1);
    out.push(b'{');
    out.extend_from_slice(&head);
    if body.len() > 2 {
        out.push(b',');
    }
    out.extend_from_slice(members);
    out.push(b'\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_id_goes_first_in_the_line() {
        assert_eq!(
            line(Some("x\""), None, b"{\"a\":1}"),
            b"{\"id\":\"x\\\"\",\"a\":1}\n"
        );
        assert_eq!(line(Some("x"), None, b"{}"), b"{\"id\":\"x\"}\n");
        assert_eq!(line(None, None, b"{\"a\":1}"), b"{\"a\":1}\n");
        assert_eq!(
            line(Some("x"), Some(7), b"{\"a\":1}"),
            b"{\"id\":\"x\",\"n_tokens\":7,\"a\":1}\n"
        );
        assert_eq!(line(None, Some(7), b"{}"), b"{\"n_tokens\":7}\n");
    }

    #[test]
    fn a_line_is_allocated_at_its_size() {
        // Rows wait in queues for the writer: room left over in each would add up.
        for (id, n, body) in [
            (Some("x"), None, &b"{\"a\":1}"[..]),
            (None, None, b"{\"b\":2}"),
            (Some("x"), Some(123), b"{\"b\":2}"),
        ] {
            let l = line(id, n, body);
            assert_eq!(l.capacity(), l.len(), "{}", String::from_utf8_lossy(&l));
        }
    }
}
