//! Cutting a trajectory at its compactions: one trajectory per compaction segment, each starting
//! from what the model was given at that point (see docs/segments.md).
//!
//! Readers that see a compaction list it in `details.<format>.compactions` (`<format>` being
//! `details.source.format` with `-` as `_`), with `step`, the index of the first step after it.
//! Where the model-facing summary is differs by format: a step at `step` (an environment
//! observation named `compact_summary` or `compaction_summary`: Claude Code, Crush, Hermes, Qwen
//! Code, Copilot CLI), or text in the entry (Pi's `summary`, Droid's `summaryText`, Codex's
//! `message` or `replacement_history`), or steps listed by index (`context_steps`: an ATIF
//! continuation's copied context, the events an OpenHands condensation kept, with its summary
//! at `summary_at`). Pi and Droid also keep the latest messages before the
//! compaction (`kept_from_step`). Where no summary is recorded, the segment starts with a marker.
//!
//! Subagent branches (`subagent.rs`) are linked to the trajectory and call that spawned them.
//! The rows of one trajectory share its details ([`Rows`]): a row is handed on with them in
//! place, in turn, so that they are never copied.

mod subagent;

use std::borrow::Cow;
use std::collections::HashSet;

use serde_json::{json, Value};

use crate::choice::choice;
use crate::model::links::unlink_unanswered;
use crate::model::{JsonObject, Source, Step, Trajectory};

/// Names of the summary observations readers write at a compaction's `step`.
const SUMMARY_NAMES: [&str; 2] = ["compact_summary", "compaction_summary"];

/// Names of the environment observations that open a trajectory with what the model is given
/// before any turn (system prompt, developer instructions, injected project context).
const LEADING_NAMES: [&str; 5] = [
    "system",
    "developer",
    "user_instructions",
    "agents_md",
    "environment_context",
];

/// Name of the observation standing for a summary the log does not record.
pub const MARKER_NAME: &str = "compaction_marker";

/// Text of that observation.
pub const MARKER_TEXT: &str =
    "[The context was compacted here: the earlier conversation was summarized, and the log does not record the summary.]";

choice!(
    /// How trajectories are cut into rows.
    Mode, "segment mode", default = None {
        /// One row per trajectory, as converted.
        None = "none",
        /// One row per compaction segment ([`segments`]).
        Compaction = "compaction",
        /// One row per trajectory, a subagent's linked to its parent ([`branch`]).
        Subagents = "subagents",
        /// Both: subagents linked, then every trajectory cut at its compactions.
        Both = "compaction,subagents" | "subagents,compaction",
    }
);

pub use subagent::branch;

/// The id of the trajectory whose split `traj` goes to: the parent of a subagent branch
/// (`details.subagent.parent`), else the trajectory a segment is of (`details.segment.of`),
/// else its own id. It keeps a session's segments and subagents together.
pub fn trajectory_of(traj: &Trajectory) -> &str {
    let of = |key: &str, field: &str| {
        traj.details
            .get(key)
            .and_then(|s| s.get(field))
            .and_then(Value::as_str)
    };
    of("subagent", "parent")
        .or_else(|| of("segment", "of"))
        .unwrap_or(&traj.id)
}

impl Mode {
    /// Whether this mode cuts trajectories at their compactions.
    pub fn cuts_compactions(self) -> bool {
        matches!(self, Mode::Compaction | Mode::Both)
    }

    /// Whether this mode links subagent branches to their parents.
    pub fn links_subagents(self) -> bool {
        matches!(self, Mode::Subagents | Mode::Both)
    }

    /// The rows `traj` makes in this mode, sharing its details: itself ([`Mode::None`]), its
    /// [`segments`] ([`Mode::Compaction`]), itself as a [`branch`] ([`Mode::Subagents`]), or the
    /// segments of the branch ([`Mode::Both`]).
    pub fn rows(self, traj: Trajectory) -> Rows {
        let traj = if self.links_subagents() {
            branch(traj)
        } else {
            traj
        };
        if self.cuts_compactions() {
            compaction_rows(traj)
        } else {
            Rows::one(traj)
        }
    }

    /// [`Mode::rows`] as trajectories, each with its own copy of the details.
    pub fn apply(self, traj: Trajectory) -> Vec<Trajectory> {
        self.rows(traj).into_trajectories()
    }
}

/// The rows one trajectory makes: each row's steps and its own `details.segment`, and the
/// trajectory's other details, which the rows share.
#[derive(Debug)]
pub struct Rows {
    shared: JsonObject,
    rows: Vec<(Trajectory, Option<Value>)>,
}

impl Rows {
    /// `traj` as its only row.
    fn one(mut traj: Trajectory) -> Rows {
        Rows {
            shared: std::mem::take(&mut traj.details),
            rows: vec![(traj, None)],
        }
    }

    /// How many rows.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether there is none (never: a trajectory makes one row at least).
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Whether the rows are a subagent's branch, linked to its parent.
    pub fn is_branch(&self) -> bool {
        self.shared.contains_key("subagent")
    }

    /// Hands each row to `f` in order, whole: with the shared details and its own
    /// `details.segment` last. Every row but the last is lent (`Cow::Borrowed`) and the details
    /// taken back after it; the last is given. Returns what `f` made of each.
    pub fn each<T>(self, mut f: impl FnMut(Cow<'_, Trajectory>) -> T) -> Vec<T> {
        let Rows { mut shared, rows } = self;
        let last = rows.len().saturating_sub(1);
        let mut out = Vec::with_capacity(rows.len());
        for (k, (mut traj, segment)) in rows.into_iter().enumerate() {
            traj.details = std::mem::take(&mut shared);
            let own = segment.is_some();
            if let Some(info) = segment {
                traj.details.insert("segment".into(), info);
            }
            if k == last {
                out.push(f(Cow::Owned(traj)));
                break;
            }
            out.push(f(Cow::Borrowed(&traj)));
            shared = std::mem::take(&mut traj.details);
            if own {
                // The key inserted last: removing it restores the order the details had.
                shared.remove("segment");
            }
        }
        out
    }

    /// The rows as trajectories, each with its own copy of the shared details.
    pub fn into_trajectories(self) -> Vec<Trajectory> {
        self.each(|row| row.into_owned())
    }
}

/// What a segment starts from, after the leading steps.
#[derive(Debug, Clone, PartialEq)]
enum Start {
    /// The step at the cut is the summary the reader kept.
    SummaryStep,
    /// The summary, as text of the compaction's entry.
    Text(String),
    /// The history the model went on from, as recorded (Codex's `replacement_history`).
    History(Vec<Step>, bool),
    /// The trajectory's steps the model went on from, by content index, in order (`context_steps`:
    /// the context an ATIF continuation file copies, the events an OpenHands condensation
    /// kept), and the summary given among them at a position (`summary`, `summary_at`). Steps
    /// at or after the cut are the segment's own first steps and are not repeated.
    Context(Vec<usize>, Option<(usize, String)>),
    /// No summary recorded: a marker.
    Marker,
}

/// One compaction: where the trajectory is cut and what the segment after it starts from.
#[derive(Debug, Clone, PartialEq)]
struct Cut {
    step: usize,
    start: Start,
    /// First step of the messages kept before the compaction (Pi, Droid), when before `step`.
    kept_from: Option<usize>,
}

/// The compaction segments of `traj`, in order: segment 0 holds the steps before the first
/// compaction, segment k the k-th compaction's context (leading system steps, the summary, the
/// kept messages) then its own steps up to the next compaction. A trajectory without a
/// compaction (or already a segment) is returned unchanged, alone.
///
/// Segment ids are `<id>#segment-<n>`; `details` is the original's, plus `details.segment`:
/// `{of, index, count, summary, steps: [from, to], kept: [from, to]?, excluded_from_training?,
/// unlinked?}` where `steps` is the range of the original's steps the segment's own steps are,
/// `summary` is `"recorded"`, `"marker"` or `null` (segment 0), `excluded_from_training` the
/// segment's steps the original marks not for training (where it marks any), and `unlinked`
/// counts the call links cleared because the call or its result is in another segment.
pub fn segments(traj: Trajectory) -> Vec<Trajectory> {
    compaction_rows(traj).into_trajectories()
}

/// How many rows [`segments`] cuts `traj` into, without cutting it.
pub fn count(traj: &Trajectory) -> usize {
    if traj.details.contains_key("segment") {
        return 1;
    }
    let cuts = cuts(&traj.details, &traj.content);
    match cuts.first() {
        None => 1,
        Some(first) => cuts.len() + usize::from(first.step > 0),
    }
}

/// [`segments`] as [`Rows`] sharing the trajectory's details.
fn compaction_rows(traj: Trajectory) -> Rows {
    if traj.details.contains_key("segment") {
        return Rows::one(traj);
    }
    let cuts = cuts(&traj.details, &traj.content);
    if cuts.is_empty() {
        return Rows::one(traj);
    }
    let leading = leading_len(&traj.content[..cuts[0].step]);
    let mut bounds: Vec<(usize, usize, Option<&Cut>)> = Vec::new();
    if cuts[0].step > 0 {
        bounds.push((0, cuts[0].step, None));
    }
    for (i, c) in cuts.iter().enumerate() {
        let end = cuts.get(i + 1).map_or(traj.content.len(), |n| n.step);
        bounds.push((c.step, end, Some(c)));
    }
    let count = bounds.len();
    // The steps given again after a cut (the leading system steps, Pi's and Droid's kept
    // messages) are copied before the segments take their own steps out of the trajectory.
    let leading_steps: Vec<Step> = traj.content[..leading].to_vec();
    let kept: Vec<Option<Vec<Step>>> = bounds
        .iter()
        .map(|&(from, _, cut)| {
            cut.and_then(|c| c.kept_from)
                .map(|k| traj.content[k..from].to_vec())
        })
        .collect();
    let untrained = untrained_steps(&traj.details);
    let context_steps: std::collections::HashMap<usize, Step> = cuts
        .iter()
        .filter_map(|c| match &c.start {
            Start::Context(indices, _) => Some(indices),
            _ => None,
        })
        .flatten()
        .map(|&i| (i, traj.content[i].clone()))
        .collect();
    let Trajectory {
        schema_version,
        id,
        content: steps,
        available_apis,
        available_custom_tools,
        available_code_languages,
        details,
    } = traj;
    let mut steps = steps.into_iter();
    let mut out = Vec::with_capacity(count);
    for (index, (&(from, to, cut), kept)) in bounds.iter().zip(kept).enumerate() {
        let mut content = Vec::new();
        let mut info = JsonObject::new();
        info.insert("of".into(), Value::from(id.clone()));
        info.insert("index".into(), Value::from(index));
        info.insert("count".into(), Value::from(count));
        // The bounds cover the steps from 0 in order: the segment's own steps come next.
        let mut own = (from..to).zip(steps.by_ref().take(to - from));
        // The original's index of each step of the segment (`None`: a step the cut made).
        let mut origins: Vec<Option<usize>> = Vec::new();
        let mut repeated: &[usize] = &[];
        let summary = cut.map(|c| {
            let recorded = match &c.start {
                Start::History(history, recorded) => {
                    content.extend(history.iter().cloned());
                    origins.extend(history.iter().map(|_| None));
                    *recorded
                }
                Start::Context(indices, summary) => {
                    for (k, &i) in indices.iter().enumerate() {
                        if let Some((_, text)) = summary.as_ref().filter(|(at, _)| *at == k) {
                            content.push(summary_step(text));
                            origins.push(None);
                        }
                        content.push(context_steps[&i].clone());
                        origins.push(Some(i));
                    }
                    if let Some((_, text)) = summary.as_ref().filter(|(at, _)| *at >= indices.len())
                    {
                        content.push(summary_step(text));
                        origins.push(None);
                    }
                    repeated = indices;
                    true
                }
                start => {
                    let lead = leading.min(from);
                    content.extend(leading_steps[..lead].iter().cloned());
                    origins.extend((0..lead).map(Some));
                    match start {
                        Start::Text(text) => content.push(summary_step(text)),
                        Start::Marker => content.push(marker()),
                        // The summary step at `from`: the segment's first own step.
                        _ => {
                            content.extend(own.next().map(|(_, s)| s));
                            origins.push(Some(from));
                        }
                    }
                    if !matches!(start, Start::SummaryStep) {
                        origins.push(None);
                    }
                    !matches!(start, Start::Marker)
                }
            };
            if let (Some(k), Some(steps)) = (c.kept_from, &kept) {
                content.extend(steps.iter().cloned());
                origins.extend((k..from).map(Some));
                info.insert("kept".into(), json!([k, from]));
            }
            if recorded {
                "recorded"
            } else {
                "marker"
            }
        });
        info.insert("summary".into(), summary.map_or(Value::Null, Value::from));
        for (i, step) in own.filter(|(i, _)| !repeated.contains(i)) {
            content.push(step);
            origins.push(Some(i));
        }
        info.insert("steps".into(), json!([from, to]));
        if let Some(untrained) = &untrained {
            // The steps the original marks not for training, as the segment's indices.
            let mine: Vec<usize> = (0..origins.len())
                .filter(|&k| origins[k].is_some_and(|i| untrained.contains(&i)))
                .collect();
            info.insert("excluded_from_training".into(), json!(mine));
        }
        let unlinked = unlink_across(&mut content);
        if unlinked > 0 {
            info.insert("unlinked".into(), Value::from(unlinked));
        }
        let mut segment = Trajectory {
            schema_version: schema_version.clone(),
            id: format!("{id}#segment-{index}"),
            content,
            available_apis: available_apis.clone(),
            available_custom_tools: available_custom_tools.clone(),
            available_code_languages: None,
            details: JsonObject::new(),
        };
        // The languages the segment's own code actions use, where the original lists them.
        if available_code_languages.is_some() {
            segment.available_code_languages = segment.used_code_languages();
        }
        out.push((segment, Some(Value::Object(info))));
    }
    Rows {
        shared: details,
        rows: out,
    }
}

/// The compactions of a trajectory's details, ordered by step, one per step (the last one listed
/// at a step wins), each before the end of `content`. Entries without a step, or at step 0 with
/// nothing before them and no summary to start from, are not cuts.
fn cuts(details: &JsonObject, content: &[Step]) -> Vec<Cut> {
    let Some(format) = details
        .get("source")
        .and_then(|s| s.get("format"))
        .and_then(Value::as_str)
    else {
        return Vec::new();
    };
    let key = format.replace('-', "_");
    let Some(list) = details
        .get(&key)
        .and_then(|d| d.get("compactions"))
        .and_then(Value::as_array)
    else {
        return Vec::new();
    };
    let mut cuts: Vec<Cut> = Vec::new();
    for entry in list {
        // Copilot CLI lists a compaction's start too; a failed one changed nothing.
        if entry.get("event").and_then(Value::as_str) == Some("start")
            || entry.get("success").and_then(Value::as_bool) == Some(false)
        {
            continue;
        }
        let Some(step) = entry
            .get("step")
            .and_then(Value::as_u64)
            .map(|s| s as usize)
        else {
            continue;
        };
        if step >= content.len() {
            continue;
        }
        let kept_from = entry
            .get("kept_from_step")
            .and_then(Value::as_u64)
            .map(|k| k as usize)
            .filter(|&k| k < step);
        let start = if let Some(context) = context_start(entry, content.len()) {
            context
        } else if is_summary(&content[step]) {
            Start::SummaryStep
        } else {
            entry_start(entry)
        };
        cuts.push(Cut {
            step,
            start,
            kept_from,
        });
    }
    cuts.sort_by_key(|c| c.step);
    let mut one_per_step: Vec<Cut> = Vec::with_capacity(cuts.len());
    for c in cuts {
        match one_per_step.last_mut() {
            Some(last) if last.step == c.step => *last = c,
            _ => one_per_step.push(c),
        }
    }
    one_per_step
}

/// The context an entry lists the segment starting from (`context_steps`, content indices below
/// `len`), with the summary given among them (`summary` before the `summary_at`-th, else after
/// them); `None` when it lists none and gives no summary with them.
fn context_start(entry: &Value, len: usize) -> Option<Start> {
    let listed = entry.get("context_steps")?.as_array()?;
    let indices: Vec<usize> = listed
        .iter()
        .filter_map(|i| i.as_u64().map(|i| i as usize))
        .filter(|&i| i < len)
        .collect();
    let summary = entry.get("summary").and_then(Value::as_str).map(|text| {
        let at = entry.get("summary_at").and_then(Value::as_u64);
        (at.map_or(indices.len(), |a| a as usize), text.to_owned())
    });
    (!indices.is_empty() || summary.is_some()).then_some(Start::Context(indices, summary))
}

/// The summary observation given with a context.
fn summary_step(text: &str) -> Step {
    Step::environment_text(Some("compaction_summary".into()), text)
}

/// What an entry says the segment starts from: Codex's replacement history, else the summary
/// text of Pi (`summary`), Droid (`summaryText`) or Codex (`message`), else a marker.
fn entry_start(entry: &Value) -> Start {
    let payload = entry.get("payload").unwrap_or(&Value::Null);
    if let Some(history) = payload
        .get("replacement_history")
        .and_then(Value::as_array)
        .filter(|h| !h.is_empty())
    {
        return codex_history(history);
    }
    [
        entry.get("summary"),
        entry.get("summaryText"),
        payload.get("message"),
    ]
    .into_iter()
    .flatten()
    .filter_map(Value::as_str)
    .find(|s| !s.trim().is_empty())
    .map_or(Start::Marker, |s| Start::Text(s.to_owned()))
}

/// Codex's replacement history as steps: user messages as user observations, developer and
/// system messages as environment observations named after their role, assistant messages as
/// message actions; an encrypted compaction item (a remote compaction's summary) as the marker.
/// Other items (calls, reasoning) are not given back to the model as text and are skipped.
/// The history counts as a recorded summary unless it held an encrypted one.
fn codex_history(history: &[Value]) -> Start {
    let mut steps = Vec::new();
    let mut recorded = true;
    for item in history {
        match item.get("type").and_then(Value::as_str) {
            Some("message") => {
                let text = item
                    .get("content")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|p| p.get("text").and_then(Value::as_str))
                    .collect::<Vec<_>>()
                    .join("\n");
                let step = match item.get("role").and_then(Value::as_str) {
                    Some("user") => Step::user_text(text),
                    Some("assistant") => Step::message(text, None),
                    Some(role) => Step::environment_text(Some(role.to_owned()), text),
                    None => continue,
                };
                steps.push(step);
            }
            Some("compaction" | "compaction_summary" | "context_compaction") => {
                steps.push(marker());
                recorded = false;
            }
            _ => {}
        }
    }
    Start::History(steps, recorded)
}

/// The content indices the trajectory's reader marked not for training
/// (`excluded_from_training` in any object of its details: ATIF, SWE-agent), if it marks any.
fn untrained_steps(details: &JsonObject) -> Option<HashSet<usize>> {
    let lists: Vec<&Vec<Value>> = details
        .values()
        .filter_map(|v| v.get("excluded_from_training")?.as_array())
        .collect();
    (!lists.is_empty()).then(|| {
        lists
            .into_iter()
            .flatten()
            .filter_map(|i| usize::try_from(i.as_u64()?).ok())
            .collect()
    })
}

/// Whether a step is a summary observation a reader kept.
fn is_summary(step: &Step) -> bool {
    matches!(step, Step::TextObservation(o)
        if o.source == Source::Environment
            && o.name.as_deref().is_some_and(|n| SUMMARY_NAMES.contains(&n)))
}

/// How many steps open `content` with what the model is given before any turn.
fn leading_len(content: &[Step]) -> usize {
    content
        .iter()
        .take_while(|s| {
            matches!(s, Step::TextObservation(o)
                if o.source == Source::Environment
                    && o.name.as_deref().is_some_and(|n| LEADING_NAMES.contains(&n)))
        })
        .count()
}

/// The observation standing for an unrecorded summary.
fn marker() -> Step {
    Step::environment_text(Some(MARKER_NAME.into()), MARKER_TEXT)
}

/// Clears the links a segment cannot keep: a call whose result is in another segment, a result
/// whose call is. Both steps stay. Returns how many steps lost their link.
fn unlink_across(content: &mut [Step]) -> usize {
    let called: HashSet<String> = content
        .iter()
        .filter(|s| s.is_tool_action())
        .filter_map(|s| s.tool_call_id().map(str::to_owned))
        .collect();
    let before = linked(content);
    for step in content.iter_mut().filter(|s| !s.is_action()) {
        let slot = step.tool_call_id_mut();
        if slot.as_ref().is_some_and(|id| !called.contains(id)) {
            *slot = None;
        }
    }
    unlink_unanswered(content);
    before - linked(content)
}

fn linked(content: &[Step]) -> usize {
    content
        .iter()
        .filter(|s| s.tool_call_id().is_some())
        .count()
}

#[cfg(test)]
mod tests;
