//! How the records of a side file are read: their keys, the trajectory keys they match, and what
//! each record attaches. Presets for the formats trajkit converts match the ids and `details`
//! its own converters write; `generic` reads any JSON lines through declared paths.

use std::path::Path;
use std::str::FromStr;

use serde_json::{json, Map, Number, Value};

use super::key::{kind, KeyExpr};
use crate::formats::ledgermind::store::{CITATION_KEYS, SEMANTIC_KINDS};
use crate::formats::{ledgermind, memabra, ralph, reflexion};
use crate::json::Node;

/// A side-file format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Preset {
    /// Reflexion records: key `{loop_id}#{iteration}`; reward, outcome, reflection.
    Reflexion,
    /// Lines of a Ralph task's `reflections.jsonl`: key `{task_id}/attempt-{attempt_id:03}`.
    Ralph,
    /// memabra traces: key `/trajectory_id`; reward, reward components, outcome.
    Memabra,
    /// LedgerMind events (JSON lines): semantic events, keyed by session and cited event ids.
    LedgerMind,
    /// Any JSON lines: `--key` and the value paths say everything.
    Generic,
}

impl Preset {
    /// Every preset, in the order listed in help texts.
    pub const ALL: [Preset; 5] = [
        Preset::Reflexion,
        Preset::Ralph,
        Preset::Memabra,
        Preset::LedgerMind,
        Preset::Generic,
    ];

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Preset::Reflexion => "reflexion",
            Preset::Ralph => "ralph",
            Preset::Memabra => "memabra",
            Preset::LedgerMind => "ledgermind",
            Preset::Generic => "generic",
        }
    }
}

impl FromStr for Preset {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Preset::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Preset::ALL.iter().map(|p| p.name()).collect();
                format!("unknown side format {s:?} (known: {})", names.join(", "))
            })
    }
}

/// Paths of the values a `generic` side file attaches (JSON pointers; `a.b` is read as `/a/b`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GenericFields {
    /// The trajectory reward: a number, or a boolean (1.0 when true, 0.0 when false).
    pub reward: Option<String>,
    /// Reward components: an object of numbers.
    pub components: Option<String>,
    /// The outcome: one of the status names, or a boolean (success / failure).
    pub outcome: Option<String>,
    /// Per-step rewards: a list with one number (or null) per step, or a list of
    /// `{"step": index, "reward": number}`.
    pub step_rewards: Option<String>,
    /// A reflection's text.
    pub text: Option<String>,
}

impl GenericFields {
    fn is_empty(&self) -> bool {
        *self == GenericFields::default()
    }
}

/// Where the memory window finds a record's loop and iteration, and a trajectory's.
#[derive(Debug, Clone)]
pub struct WindowSpec {
    /// The loop (group) of a side record.
    pub group: KeyExpr,
    /// The iteration of a side record (an integer, or a string of decimal digits).
    pub iteration: KeyExpr,
    /// The loop of a trajectory that no record of the set matched.
    pub trajectory_group: KeyExpr,
    /// The iteration of such a trajectory.
    pub trajectory_iteration: KeyExpr,
}

/// How one set of side files (`--reflections` or `--rewards`) is read and matched.
#[derive(Debug, Clone)]
pub struct SideSpec {
    /// The format.
    pub preset: Preset,
    /// Key expressions of a side record; a record has the keys of all of them (those whose
    /// fields are missing are skipped, but at least one must give a key).
    pub keys: Vec<KeyExpr>,
    /// Key expressions of a trajectory, matched against the side keys.
    pub trajectory_keys: Vec<KeyExpr>,
    /// Value paths (`generic` only).
    pub generic: GenericFields,
    /// The memory window's loop and iteration (reflexion and ralph).
    pub window: Option<WindowSpec>,
}

fn exprs(texts: &[&str]) -> Vec<KeyExpr> {
    texts
        .iter()
        .filter_map(|t| KeyExpr::parse(t).ok())
        .collect()
}

fn expr(text: &str) -> Result<KeyExpr, String> {
    KeyExpr::parse(text)
}

impl SideSpec {
    /// The spec of `preset`, with the side key replaced by `key` and the trajectory key by
    /// `trajectory_key` when given. `generic` needs a key and at least one value path.
    pub fn new(
        preset: Preset,
        key: Option<KeyExpr>,
        trajectory_key: Option<KeyExpr>,
        generic: GenericFields,
    ) -> Result<SideSpec, String> {
        let id = || exprs(&["id"]);
        let (keys, trajectory_keys, window) = match preset {
            Preset::Reflexion => (
                exprs(&["{loop_id}#{iteration}"]),
                id(),
                Some(WindowSpec {
                    group: expr("loop_id")?,
                    iteration: expr("iteration")?,
                    trajectory_group: expr("/details/source/native_ids/loop_id")?,
                    trajectory_iteration: expr("/details/source/native_ids/iteration")?,
                }),
            ),
            Preset::Ralph => (
                exprs(&["{task_id}/attempt-{attempt_id:03}"]),
                id(),
                Some(WindowSpec {
                    group: expr("task_id")?,
                    iteration: expr("attempt_id")?,
                    trajectory_group: expr("/details/source/native_ids/task_id")?,
                    trajectory_iteration: expr("/details/source/native_ids/attempt")?,
                }),
            ),
            Preset::Memabra => (exprs(&["/trajectory_id"]), id(), None),
            Preset::LedgerMind => {
                let mut keys = vec!["session:{context.session_id}".to_owned()];
                keys.extend(
                    CITATION_KEYS
                        .iter()
                        .map(|k| format!("event:{{context.{k}.*}}")),
                );
                let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
                (
                    exprs(&keys),
                    exprs(&[
                        "session:{id}",
                        "event:{details.source.native_ids.event_ids.*}",
                    ]),
                    None,
                )
            }
            Preset::Generic => (Vec::new(), id(), None),
        };
        if preset == Preset::Generic {
            if key.is_none() {
                return Err("generic side files need --key (a pointer like /instance_id or a template like {task}#{n})".to_owned());
            }
            if generic.is_empty() {
                return Err("generic side files need at least one of --value, --components, --outcome, --step-rewards, --text".to_owned());
            }
        } else if !generic.is_empty() {
            return Err(format!(
                "--value, --components, --outcome, --step-rewards and --text are for generic side files, not {}",
                preset.name()
            ));
        }
        let pointer = |p: Option<String>| p.map(|p| to_pointer(&p));
        let generic = GenericFields {
            reward: pointer(generic.reward),
            components: pointer(generic.components),
            outcome: pointer(generic.outcome),
            step_rewards: pointer(generic.step_rewards),
            text: pointer(generic.text),
        };
        Ok(SideSpec {
            preset,
            keys: key.map_or(keys, |k| vec![k]),
            trajectory_keys: trajectory_key.map_or(trajectory_keys, |k| vec![k]),
            generic,
            window,
        })
    }

    /// Reads one side record of `file`. `Ok(None)` for a record the preset does not attach
    /// (a LedgerMind event that is not a semantic one).
    pub fn extract(&self, mut record: Value, file: &str) -> Result<Option<Extracted>, String> {
        if !record.is_object() {
            return Err(format!(
                "a side record must be a JSON object, found {}",
                kind(&record)
            ));
        }
        if self.preset == Preset::LedgerMind
            && !SEMANTIC_KINDS.contains(&record["kind"].as_str().unwrap_or_default())
        {
            return Ok(None);
        }
        let mut injected = false;
        if self.preset == Preset::Ralph && record.get("task_id").is_none() {
            // reflections.jsonl sits in tasks/task-NNN/: the directory names the task.
            if let Some(task) = Path::new(file)
                .parent()
                .and_then(Path::file_name)
                .and_then(|n| n.to_str())
            {
                record["task_id"] = Value::String(task.to_owned());
                injected = true;
            }
        }
        let keys = self.record_keys(&record)?;
        let window = match &self.window {
            Some(w) => Some((
                w.group.eval_one(&record).map_err(|e| e.to_string())?,
                iteration(&w.iteration, &record)?,
            )),
            None => None,
        };
        if let (true, Some(o)) = (injected, record.as_object_mut()) {
            o.remove("task_id");
        }
        let key = keys.first().cloned().unwrap_or_default();
        let attach = match self.preset {
            Preset::Reflexion => {
                let evaluator = &record["evaluator_output"];
                let iteration = record["iteration"].as_u64().unwrap_or_default();
                let reflection = match record.get("self_reflection") {
                    Some(r) if r.is_object() => {
                        Some(reflexion::reflection(Node::from_value(r), &key, iteration).to_value())
                    }
                    _ => None,
                };
                let evaluator_node = Node::from_value(evaluator);
                Attach {
                    reward: reflexion::reward(&evaluator_node).and_then(|r| r.as_number().cloned()),
                    outcome: evaluator
                        .is_object()
                        .then(|| Outcome::Value(reflexion::outcome(&evaluator_node).to_value())),
                    reflection,
                    ..Attach::default()
                }
            }
            Preset::Ralph => Attach {
                reflection: Some(ralph::reflection(&record, &key)),
                ..Attach::default()
            },
            Preset::Memabra => Attach {
                reward: record["reward"]["total"].as_number().cloned(),
                components: match &record["reward"]["components"] {
                    Value::Object(c) => Some(numbers(c, "/reward/components")?),
                    _ => None,
                },
                outcome: record["outcome"].is_object().then(|| {
                    let native = Node::from_value(&record["outcome"]);
                    Outcome::Value(memabra::outcome(&native).to_value())
                }),
                ..Attach::default()
            },
            Preset::LedgerMind => Attach {
                reflection: Some(ledgermind::reflection(&Node::from_value(&record)).to_value()),
                ..Attach::default()
            },
            Preset::Generic => self.generic_attach(&record, &key)?,
        };
        Ok(Some(Extracted {
            keys,
            attach,
            window,
        }))
    }

    fn record_keys(&self, record: &Value) -> Result<Vec<String>, String> {
        let mut keys = Vec::new();
        let mut first_error = None;
        for e in &self.keys {
            match e.eval(record) {
                Ok(k) => {
                    for k in k {
                        if !keys.contains(&k) {
                            keys.push(k);
                        }
                    }
                }
                Err(err) => {
                    first_error.get_or_insert(format!("{err} (key {e})"));
                }
            }
        }
        match (keys.is_empty(), first_error) {
            (false, _) => Ok(keys),
            (true, Some(e)) if self.keys.len() == 1 => Err(e),
            (true, _) => Err(format!(
                "no key: none of {} gives one",
                self.keys
                    .iter()
                    .map(|k| k.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }

    fn generic_attach(&self, record: &Value, key: &str) -> Result<Attach, String> {
        let g = &self.generic;
        fn get<'a>(
            record: &'a Value,
            pointer: &'a Option<String>,
        ) -> Result<Option<(&'a str, &'a Value)>, String> {
            let Some(pointer) = pointer else {
                return Ok(None);
            };
            match lookup(record, pointer) {
                Some(v) => Ok(Some((pointer, v))),
                None => Err(format!("value {pointer}: missing")),
            }
        }
        let mut out = Attach::default();
        if let Some((p, v)) = get(record, &g.reward)? {
            out.reward = Some(match v {
                Value::Number(n) => n.clone(),
                Value::Bool(b) => Number::from_f64(if *b { 1.0 } else { 0.0 })
                    .ok_or("unreachable: 0 and 1 are finite")?,
                other => {
                    return Err(format!(
                        "value {p}: is {}; a reward is a number or a boolean",
                        kind(other)
                    ))
                }
            });
        }
        if let Some((p, v)) = get(record, &g.components)? {
            match v {
                Value::Object(c) => out.components = Some(numbers(c, p)?),
                other => {
                    return Err(format!(
                        "value {p}: is {}; reward components are an object of numbers",
                        kind(other)
                    ))
                }
            }
        }
        if let Some((p, v)) = get(record, &g.outcome)? {
            out.outcome = Some(match v {
                Value::Bool(b) => Outcome::Status {
                    status: if *b { "success" } else { "failure" },
                    native: Some(*b),
                },
                Value::String(s) if OUTCOMES.contains(&s.as_str()) => Outcome::Status {
                    status: OUTCOMES
                        .iter()
                        .find(|o| **o == s.as_str())
                        .copied()
                        .unwrap_or("unknown"),
                    native: None,
                },
                other => {
                    return Err(format!(
                        "value {p}: is {}; an outcome is a boolean or one of {}",
                        crate::validate::check::preview(other),
                        OUTCOMES.join(", ")
                    ))
                }
            });
        }
        if let Some((p, v)) = get(record, &g.step_rewards)? {
            out.step_rewards = step_rewards(v, p)?;
        }
        if let Some((p, v)) = get(record, &g.text)? {
            let Value::String(text) = v else {
                return Err(format!(
                    "value {p}: is {}; a reflection text is a string",
                    kind(v)
                ));
            };
            out.reflection = Some(json!({"source": "generic", "key": key, "text": text}));
        }
        Ok(out)
    }
}

/// The outcome statuses of `schemas/details.schema.json`.
pub const OUTCOMES: &[&str] = &[
    "success",
    "partial_success",
    "failure",
    "timeout",
    "unknown",
];

/// The value at a JSON pointer, like [`Value::pointer`] without allocating for tokens that hold
/// no escape (this runs for every field of every side record).
fn lookup<'a>(record: &'a Value, pointer: &str) -> Option<&'a Value> {
    if pointer.contains('~') {
        return record.pointer(pointer);
    }
    let mut v = record;
    for token in pointer.split('/').skip(1) {
        v = match v {
            Value::Object(o) => o.get(token)?,
            Value::Array(a) => a.get(token.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(v)
}

/// `a.b` → `/a/b`; a pointer stays as it is.
fn to_pointer(path: &str) -> String {
    if path.starts_with('/') {
        path.to_owned()
    } else {
        format!("/{}", path.replace('.', "/"))
    }
}

fn numbers(c: &Map<String, Value>, at: &str) -> Result<Vec<(String, Number)>, String> {
    c.iter()
        .map(|(name, v)| match v {
            Value::Number(n) => Ok((name.clone(), n.clone())),
            other => Err(format!(
                "value {at}/{name}: is {}; reward components are numbers",
                kind(other)
            )),
        })
        .collect()
}

fn step_rewards(v: &Value, at: &str) -> Result<Vec<(usize, f64)>, String> {
    let Value::Array(items) = v else {
        return Err(format!(
            "value {at}: is {}; step rewards are a list",
            kind(v)
        ));
    };
    let mut out = Vec::new();
    for (i, item) in items.iter().enumerate() {
        match item {
            Value::Null => {}
            Value::Number(n) => out.push((i, n.as_f64().unwrap_or_default())),
            Value::Object(o) => match (
                o.get("step").and_then(Value::as_u64),
                o.get("reward").and_then(Value::as_f64),
            ) {
                (Some(step), Some(r)) => out.push((step as usize, r)),
                _ => {
                    return Err(format!(
                        "value {at}/{i}: a step reward object needs an integer \"step\" and a number \"reward\""
                    ))
                }
            },
            other => {
                return Err(format!(
                    "value {at}/{i}: is {}; a step reward is a number, null or {{\"step\", \"reward\"}}",
                    kind(other)
                ))
            }
        }
    }
    Ok(out)
}

/// The iteration of a record: an integer, or a string of decimal digits (Ralph's attempt
/// directory names, `002`).
pub fn iteration(e: &KeyExpr, record: &dyn super::key::Fields) -> Result<i64, String> {
    let text = e.eval_one(record).map_err(|err| err.to_string())?;
    text.parse::<i64>()
        .map_err(|_| format!("iteration {e}: {text:?} is not an integer"))
}

/// What one side record attaches.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Attach {
    /// `details.reward`.
    pub reward: Option<Number>,
    /// `details.reward_components`: (name, value) in record order.
    pub components: Option<Vec<(String, Number)>>,
    /// `details.outcome`.
    pub outcome: Option<Outcome>,
    /// One entry of `details.reflections`.
    pub reflection: Option<Value>,
    /// `(step index, reward)` for the steps' `reward`.
    pub step_rewards: Vec<(usize, f64)>,
}

/// The outcome a side record gives.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// `{"status": status, "native": …}` from a generic file: native is the boolean read, or
    /// (`None`) the status string itself.
    Status {
        /// One of [`OUTCOMES`].
        status: &'static str,
        /// The boolean the status was read from.
        native: Option<bool>,
    },
    /// A whole `details.outcome` object, as a preset's converter builds it.
    Value(Value),
}

impl Outcome {
    /// The `details.outcome` value.
    pub fn to_value(&self) -> Value {
        match self {
            Outcome::Status { status, native } => {
                let native =
                    native.map_or_else(|| Value::String((*status).to_owned()), Value::Bool);
                json!({"status": status, "native": native})
            }
            Outcome::Value(v) => v.clone(),
        }
    }
}

/// A side record, read.
#[derive(Debug, Clone)]
pub struct Extracted {
    /// Its keys (at least one).
    pub keys: Vec<String>,
    /// What it attaches.
    pub attach: Attach,
    /// Its loop and iteration, for the memory window.
    pub window: Option<(String, i64)>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(preset: Preset) -> SideSpec {
        SideSpec::new(preset, None, None, GenericFields::default()).expect("spec")
    }

    #[test]
    fn every_preset_has_side_and_trajectory_keys() {
        for p in Preset::ALL {
            if p == Preset::Generic {
                continue;
            }
            let s = spec(p);
            assert!(
                !s.keys.is_empty() && !s.trajectory_keys.is_empty(),
                "{}",
                p.name()
            );
            assert_eq!(p.name().parse::<Preset>(), Ok(p));
        }
        assert_eq!(spec(Preset::LedgerMind).keys.len(), 1 + CITATION_KEYS.len());
        assert!("klingon".parse::<Preset>().is_err());
    }

    #[test]
    fn ralph_reads_the_task_from_the_directory_and_pads_the_attempt() {
        let r = json!({"attempt_id": 2, "observation": "o", "learning": "l"});
        let x = spec(Preset::Ralph)
            .extract(r, "mem/tasks/task-001/reflections.jsonl")
            .expect("reads")
            .expect("attaches");
        assert_eq!(x.keys, vec!["task-001/attempt-002"]);
        assert_eq!(x.window, Some(("task-001".to_owned(), 2)));
        let reflection = x.attach.reflection.expect("reflection");
        assert_eq!(reflection["key"], "task-001/attempt-002");
        assert_eq!(reflection["lessons"], json!(["l"]));
    }

    #[test]
    fn ledgermind_keys_sessions_and_cited_events_and_skips_steps() {
        let s = spec(Preset::LedgerMind);
        let e = json!({"id": 10, "kind": "reflection", "content": "c",
                       "context": {"event_ids": [3, 4], "session_id": "s-1"}});
        let x = s.extract(e, "e.jsonl").expect("reads").expect("attaches");
        assert_eq!(x.keys, vec!["session:s-1", "event:3", "event:4"]);
        let step = json!({"id": 3, "kind": "call", "content": "ls", "context": {}});
        assert!(s.extract(step, "e.jsonl").expect("reads").is_none());
        let uncited = json!({"id": 11, "kind": "insight", "content": "c", "context": {}});
        assert!(s
            .extract(uncited, "e.jsonl")
            .unwrap_err()
            .contains("no key"));
    }

    #[test]
    fn generic_values_are_read_from_declared_paths_only() {
        let fields = GenericFields {
            reward: Some("/resolved".into()),
            outcome: Some("resolved".into()),
            ..GenericFields::default()
        };
        let s = SideSpec::new(
            Preset::Generic,
            Some(KeyExpr::parse("/instance_id").expect("key")),
            None,
            fields,
        )
        .expect("spec");
        let x = s
            .extract(json!({"instance_id": "a", "resolved": true}), "f")
            .expect("reads")
            .expect("attaches");
        assert_eq!(x.attach.reward, Number::from_f64(1.0));
        assert_eq!(
            x.attach.outcome.expect("outcome").to_value()["status"],
            "success"
        );
        let e = s
            .extract(json!({"instance_id": "a", "resolved": "yes"}), "f")
            .unwrap_err();
        assert!(e.contains("value /resolved"), "{e}");
        let e = s.extract(json!({"resolved": true}), "f").unwrap_err();
        assert!(e.contains("instance_id") && e.contains("missing"), "{e}");
    }

    #[test]
    fn generic_needs_a_key_and_a_value_and_presets_refuse_value_paths() {
        let g = GenericFields {
            reward: Some("/r".into()),
            ..GenericFields::default()
        };
        assert!(SideSpec::new(Preset::Generic, None, None, g.clone()).is_err());
        let key = KeyExpr::parse("/id").ok();
        assert!(SideSpec::new(Preset::Generic, key, None, GenericFields::default()).is_err());
        assert!(SideSpec::new(Preset::Memabra, None, None, g).is_err());
    }
}
