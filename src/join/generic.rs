//! `generic`, the side format built into `join`: any JSON lines, read through the key and the
//! value paths the user declares (`--key`, `--value`, `--components`, `--outcome`,
//! `--step-rewards`, `--text`).

use serde_json::{json, Number, Value};

use super::key::kind;
use super::side::{components, Attach, Outcome, SideFormat, OUTCOMES};

/// The name of the generic side format on the command line.
pub const NAME: &str = "generic";

/// What `join --help` says of it.
pub const HELP: &str = "--key and --value/--components/--outcome/--step-rewards/--text";

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
    /// True when no value path is declared.
    pub fn is_empty(&self) -> bool {
        *self == GenericFields::default()
    }
}

/// The generic side format with its declared value paths (as JSON pointers).
#[derive(Debug, Clone)]
pub struct Generic {
    fields: GenericFields,
}

impl Generic {
    /// The generic side format reading `fields`; `has_key` tells whether a key was declared
    /// (it has no key of its own). It needs a key and at least one value path.
    pub fn new(has_key: bool, fields: GenericFields) -> Result<Generic, String> {
        if !has_key {
            return Err("generic side files need --key (a pointer like /instance_id or a template like {task}#{n})".to_owned());
        }
        if fields.is_empty() {
            return Err("generic side files need at least one of --value, --components, --outcome, --step-rewards, --text".to_owned());
        }
        let pointer = |p: Option<String>| p.map(|p| to_pointer(&p));
        Ok(Generic {
            fields: GenericFields {
                reward: pointer(fields.reward),
                components: pointer(fields.components),
                outcome: pointer(fields.outcome),
                step_rewards: pointer(fields.step_rewards),
                text: pointer(fields.text),
            },
        })
    }
}

impl SideFormat for Generic {
    fn name(&self) -> &'static str {
        NAME
    }

    fn help(&self) -> &'static str {
        HELP
    }

    /// None: the declared key is the only one.
    fn keys(&self) -> Vec<String> {
        Vec::new()
    }

    fn attach(&self, record: &Value, key: &str) -> Result<Attach, String> {
        let g = &self.fields;
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
                Value::Object(c) => out.components = Some(components(c, p)?),
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
            out.reflection = Some(json!({"source": NAME, "key": key, "text": text}));
        }
        Ok(out)
    }
}

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
