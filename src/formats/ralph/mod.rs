//! aiwg Ralph episodic memory: one trajectory per attempt directory, read by
//! [`episodic`]. The mapping is in docs/formats/ralph.md.

pub mod episodic;
pub mod side;

use std::io;
use std::path::Path;
use std::sync::Arc;

use serde_json::{json, Map, Value};

use self::episodic::{is_episodic_root, EpisodicRecords};
use crate::convert::{
    ConvertOptions, Converter, FormatOption, FormatOptions, LeftOut, OptionValue,
};
use crate::formats::kit::{parse_bundle, source_details};
use crate::formats::Format;
use crate::ingest::{boxed, RawRecord, RecordSource};
use crate::model::{AdpVersion, JsonObject, Step, Trajectory};
use crate::validate::schemas::RawSchema;
use crate::validate::Diagnostic;

/// The JSON Schema of raw `ralph-action` records (`validate --schema ralph-action`).
pub static SCHEMA_ACTION: RawSchema = RawSchema::new(
    "ralph-action",
    "type",
    &[(
        "https://trajkit.invalid/schemas/raw/ralph/action.schema.json",
        include_str!("../../../schemas/raw/ralph/action.schema.json"),
    )],
    &[],
);

/// The JSON Schema of raw `ralph-attempt` records (`validate --schema ralph-attempt`).
pub static SCHEMA_ATTEMPT: RawSchema = RawSchema::new(
    "ralph-attempt",
    "task_id",
    &[
        (
            "https://trajkit.invalid/schemas/raw/ralph/attempt.schema.json",
            include_str!("../../../schemas/raw/ralph/attempt.schema.json"),
        ),
        (
            "https://trajkit.invalid/schemas/raw/ralph/outcome.schema.json",
            include_str!("../../../schemas/raw/ralph/outcome.schema.json"),
        ),
    ],
    &[],
);

/// The JSON Schema of raw `ralph-outcome` records (`validate --schema ralph-outcome`).
pub static SCHEMA_OUTCOME: RawSchema = RawSchema::new(
    "ralph-outcome",
    "status",
    &[(
        "https://trajkit.invalid/schemas/raw/ralph/outcome.schema.json",
        include_str!("../../../schemas/raw/ralph/outcome.schema.json"),
    )],
    &[],
);

/// The JSON Schema of raw `ralph-reflection` records (`validate --schema ralph-reflection`).
pub static SCHEMA_REFLECTION: RawSchema = RawSchema::new(
    "ralph-reflection",
    "attempt_id",
    &[(
        "https://trajkit.invalid/schemas/raw/ralph/reflection.schema.json",
        include_str!("../../../schemas/raw/ralph/reflection.schema.json"),
    )],
    &[],
);

/// The JSON Schema of raw `ralph-task` records (`validate --schema ralph-task`).
pub static SCHEMA_TASK: RawSchema = RawSchema::new(
    "ralph-task",
    "id",
    &[(
        "https://trajkit.invalid/schemas/raw/ralph/task.schema.json",
        include_str!("../../../schemas/raw/ralph/task.schema.json"),
    )],
    &[],
);

/// `ralph_plan`: put the attempt's `plan.md` into the first observation, after the task (else
/// it goes to `details.ralph.plan`).
pub const PLAN: FormatOption = FormatOption {
    key: "ralph_plan",
    flag: "ralph-plan",
    default: OptionValue::Bool(true),
    value_name: "BOOL",
    help:
        "Ralph: put the attempt's plan.md into the first observation; with false, into details.ralph.plan",
};

/// Reads Ralph episodic-memory directories.
pub struct Ralph;

/// The format in the registry: its converter, and its side format for `join`.
pub const FORMAT: Format = Format {
    converter: &Ralph,
    side: Some(&side::RalphSide),
};

/// Action fields that are the step's own or kept in details (the rest are arguments).
const ACTION_OWN: &[&str] = &["type", "params", "reasoning", "output", "error"];

impl Converter for Ralph {
    fn name(&self) -> &'static str {
        "ralph"
    }

    fn raw_schemas(&self) -> &'static [&'static RawSchema] {
        static SCHEMAS: [&RawSchema; 5] = [
            &SCHEMA_ACTION,
            &SCHEMA_ATTEMPT,
            &SCHEMA_OUTCOME,
            &SCHEMA_REFLECTION,
            &SCHEMA_TASK,
        ];
        &SCHEMAS
    }

    fn options(&self) -> &'static [&'static FormatOption] {
        &[&PLAN]
    }

    fn description(&self) -> &'static str {
        "aiwg Ralph episodic memory: a directory tasks/task-NNN/attempts/NNN/ (one trajectory per attempt)"
    }

    fn sniff(&self, _first: &Value) -> bool {
        false
    }

    fn claims_path(&self, path: &Path) -> bool {
        is_episodic_root(path)
    }

    fn open_source(
        &self,
        path: &str,
        _opts: &ConvertOptions,
    ) -> Option<io::Result<Box<dyn RecordSource>>> {
        Some(boxed(EpisodicRecords::open(path)))
    }

    fn convert(
        &self,
        record: &RawRecord,
        map: &FormatOptions,
    ) -> Result<Vec<(Trajectory, AdpVersion)>, Vec<Diagnostic>> {
        let bundle = parse_bundle(
            record,
            "episodic_attempt",
            "not an attempt of an episodic-memory directory (use --from ralph on the directory)",
        )?;
        let prov = &record.provenance;
        let id = trajectory_id(
            bundle["task_id"].as_str().unwrap_or_default(),
            bundle["attempt"].as_str().unwrap_or_default(),
        );
        let problems = bundle["problems"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        if !problems.is_empty() {
            return Err(problems
                .iter()
                .map(|p| {
                    let mut d = Diagnostic::error(
                        prov,
                        Some(&id),
                        "",
                        "episodic-file",
                        p["message"].as_str().unwrap_or("unreadable"),
                    );
                    d.file = Arc::from(p["file"].as_str().unwrap_or_default());
                    d.line = p["line"].as_u64().unwrap_or(1);
                    d
                })
                .collect());
        }
        Ok(vec![(
            to_trajectory(&bundle, id, record, map),
            AdpVersion::V1_5,
        )])
    }
}

/// The trajectory id of attempt `attempt` (the directory name, e.g. `002`) of task `task_id`.
pub fn trajectory_id(task_id: &str, attempt: &str) -> String {
    format!("{task_id}/attempt-{attempt}")
}

/// The task statement: description, completion criteria and the attempt's plan.
fn task_text(task: &Value, plan: Option<&str>) -> Option<String> {
    let mut parts = Vec::new();
    if let Some(d) = task["description"].as_str() {
        parts.push(d.to_owned());
    }
    if let Some(c) = task["completion_criteria"].as_str() {
        parts.push(format!("Completion criteria: {c}"));
    }
    if let Some(p) = plan.filter(|p| !p.trim().is_empty()) {
        parts.push(format!("Plan:\n{}", p.trim_end()));
    }
    (!parts.is_empty()).then(|| parts.join("\n\n"))
}

/// A bash action with a command becomes code; any other an api action named by its type
/// (`read`, `write`, `edit`, `grep`, `glob`, `task`) with its params as arguments. Its output or
/// error follows as the environment's answer.
/// Counts the keys of action `k` that its steps read but whose type is wrong (they are neither
/// in a step nor in `details.ralph.actions`, which keeps the other keys).
fn wrong_typed_keys(a: &Value, k: usize, line: u64, left: &mut LeftOut) {
    for key in ACTION_OWN {
        let ok = match &a[*key] {
            Value::Null | Value::String(_) => *key != "params",
            Value::Object(_) => *key == "params",
            _ => false,
        };
        if !ok {
            let reason = match *key {
                "params" => "an action's params are not an object".to_owned(),
                key => format!("an action's {key} is not a string"),
            };
            left.wrong_type(line, &format!("/actions/{k}/{key}"), reason);
        }
    }
}

fn action_steps(a: &Value) -> Vec<Step> {
    let kind = a["type"]
        .as_str()
        .or(a["tool"].as_str())
        .unwrap_or("action");
    let description = a["reasoning"].as_str().map(str::to_owned);
    let params = a["params"].as_object().cloned().unwrap_or_default();
    let command = params.get("command").and_then(Value::as_str);
    let action = match command {
        Some(c) if kind == "bash" && params.len() == 1 => Step::code("bash", c, description),
        _ => Step::api(kind, params, description),
    };
    let mut steps = vec![action];
    let output = a["output"].as_str();
    let error = a["error"].as_str();
    let text = match (output, error) {
        (Some(o), Some(e)) => Some(format!("{o}\nerror: {e}")),
        (Some(o), None) => Some(o.to_owned()),
        (None, Some(e)) => Some(format!("error: {e}")),
        (None, None) => None,
    };
    if let Some(text) = text {
        steps.push(Step::environment_text(Some(kind.to_owned()), text));
    }
    steps
}

/// A reflection of `reflections.jsonl` in trajkit's reflection shape; other keys kept (also
/// used by the side format, [`side`]).
pub(crate) fn reflection(r: &Value, key: &str) -> Value {
    let mut text = Vec::new();
    for (label, field) in [
        ("Observation", "observation"),
        ("Analysis", "analysis"),
        ("Learning", "learning"),
    ] {
        if let Some(t) = r[field].as_str() {
            text.push(format!("{label}: {t}"));
        }
    }
    let mut out = json!({
        "source": "ralph",
        "key": key,
        "iteration": r["attempt_id"],
        "text": text.join("\n"),
        "lessons": r["learning"].as_str().map_or(json!([]), |l| json!([l])),
        "insights": r.get("action_items").cloned().unwrap_or(json!([])),
        "root_cause": r["analysis"],
    });
    for (k, v) in r.as_object().into_iter().flatten() {
        if !matches!(
            k.as_str(),
            "attempt_id" | "observation" | "analysis" | "learning" | "action_items"
        ) {
            out[k] = v.clone();
        }
    }
    out
}

fn to_trajectory(b: &Value, id: String, record: &RawRecord, map: &FormatOptions) -> Trajectory {
    let mut content = Vec::new();
    let plan = b["plan"].as_str();
    if let Some(text) = task_text(&b["task"], plan.filter(|_| map.bool(&PLAN))) {
        content.push(Step::user_text(text));
    }
    let actions = b["actions"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    let mut left = LeftOut::new("details.ralph");
    for (k, a) in actions.iter().enumerate() {
        wrong_typed_keys(a, k, record.provenance.line, &mut left);
        content.extend(action_steps(a));
    }
    let outcome = if b["outcome"].is_object() {
        &b["outcome"]
    } else {
        &b["attempt_meta"]["outcome"]
    };
    let status = outcome["status"]
        .as_str()
        .filter(|s| matches!(*s, "success" | "failure" | "timeout"))
        .unwrap_or("unknown");
    let mut details = JsonObject::new();
    let mut source = source_details(
        "ralph",
        record,
        json!({"task_id": b["task_id"], "attempt": b["attempt"], "task": b["task"]["id"]}),
    );
    left.add_to(&mut source);
    details.insert("source".into(), source);
    details.insert(
        "outcome".into(),
        json!({"status": status, "native": outcome}),
    );
    let reflections: Vec<Value> = b["reflections"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| reflection(r, &id))
        .collect();
    if !reflections.is_empty() {
        details.insert("reflections".into(), Value::Array(reflections));
    }
    let extras: Vec<Value> = actions
        .iter()
        .map(|a| {
            Value::Object(
                a.as_object()
                    .into_iter()
                    .flatten()
                    .filter(|(k, _)| !ACTION_OWN.contains(&k.as_str()))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect::<Map<String, Value>>(),
            )
        })
        .collect();
    let mut native = json!({
        "task": b["task"],
        "attempt": b["attempt_meta"],
        "outcome": b["outcome"],
        "actions": extras,
    });
    if let (Some(plan), false) = (plan, map.bool(&PLAN)) {
        native["plan"] = json!(plan);
    }
    details.insert("ralph".into(), native);
    Trajectory::new(id, content, details)
}
