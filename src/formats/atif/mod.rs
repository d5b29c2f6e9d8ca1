//! ATIF (Harbor's Agent Trajectory Interchange Format), read in every version (v1.0 to v1.8,
//! a later v1.N with a warning) and written as v1.7 or v1.8: `read.rs`, `write.rs`, and the
//! continuation files a trajectory may be cut into, `files.rs`. The mapping is in
//! docs/formats/atif.md.
//!
//! ATIF versions, from the RFC and Harbor's models (the reader accepts the fields of all of
//! them whatever the version a file states, as real files mix them):
//! - v1.0: `schema_version`, `session_id`, `agent {name, version, model_name, extra}`,
//!   `steps`, `notes`, `final_metrics`; steps `{step_id, timestamp, source, model_name,
//!   reasoning_effort, message, reasoning_content, tool_calls, observation, metrics, extra}`;
//!   metrics `{prompt_tokens, completion_tokens, cached_tokens, cost_usd, logprobs, extra}`;
//!   results `{source_call_id, content, subagent_trajectory_ref [{session_id,
//!   trajectory_path, extra}]}`;
//! - v1.1: root `extra`; v1.2: `observation` on system steps; v1.3:
//!   `metrics.completion_token_ids`; v1.4: `metrics.prompt_token_ids`;
//! - v1.5: `agent.tool_definitions`, step `is_copied_context`, root
//!   `continued_trajectory_ref` (continuation files);
//! - v1.6: content parts (`message` and result `content` may be arrays of `{type: text|image,
//!   text, source {media_type, path}}`);
//! - v1.7: root `trajectory_id` and `subagent_trajectories` (embedded subagents), `extra` on
//!   tool calls and on results, step `llm_call_count`, `session_id` optional, refs resolved by
//!   `trajectory_id` or `trajectory_path`;
//! - v1.8: audio parts (`{type: audio, source {media_type, path, duration_sec}}`).

mod files;
mod read;
mod write;

use std::io;

use serde_json::Value;

pub use self::write::to_atif;
use crate::convert::{
    ConvertOptions, Converter, FormatOption, FormatOptions, OptionValue, PartialSink,
};
use crate::formats::kit::has_keys;
use crate::formats::Format;
use crate::ingest::{RawRecord, RecordSource};
use crate::model::Trajectory;
use crate::validate::schemas::RawSchema;
use crate::validate::Diagnostic;

/// The JSON Schema of ATIF as read, v1.0 to v1.8 (`validate --schema atif`).
pub static SCHEMA: RawSchema = RawSchema::new(
    "atif",
    "trajectory_id",
    &[(
        "https://trajkit.invalid/schemas/raw/atif.schema.json",
        include_str!("../../../schemas/raw/atif.schema.json"),
    )],
    &[],
);

/// The JSON Schema of ATIF v1.7 as written (`validate --schema atif-v1.7`).
pub static SCHEMA_V1_7: RawSchema = RawSchema::new(
    "atif-v1.7",
    "trajectory_id",
    &[(
        "https://trajkit.invalid/schemas/raw/atif-v1.7.schema.json",
        include_str!("../../../schemas/raw/atif-v1.7.schema.json"),
    )],
    &[],
);

/// The JSON Schema of ATIF v1.8 as written (`validate --schema atif-v1.8`).
pub static SCHEMA_V1_8: RawSchema = RawSchema::new(
    "atif-v1.8",
    "trajectory_id",
    &[(
        "https://trajkit.invalid/schemas/raw/atif-v1.8.schema.json",
        include_str!("../../../schemas/raw/atif-v1.8.schema.json"),
    )],
    &[],
);

/// `atif_merge_continuations`: a trajectory and its continuation files given with it become
/// one trajectory (else one each, linked in `details.atif.chain`).
pub const MERGE: FormatOption = FormatOption {
    key: "atif_merge_continuations",
    flag: "atif-merge-continuations",
    default: OptionValue::Bool(true),
    value_name: "BOOL",
    help: "ATIF: a trajectory and the continuation files given with it (continued_trajectory_ref, *.cont-N.json) become one trajectory; with false, one trajectory per file, each naming the others in details.atif.chain",
};

/// `atif_version`: the ATIF version `convert --to atif` writes.
pub const VERSION: FormatOption = FormatOption {
    key: "atif_version",
    flag: "atif-version",
    default: OptionValue::Choice("1.7", &["1.7", "1.8"]),
    value_name: "VERSION",
    help: "ATIF: the version convert --to atif writes, 1.7 or 1.8 (each output record matches schemas/raw/atif-v1.N.schema.json)",
};

/// Reads ATIF trajectories.
pub struct Atif;

/// The format in the registry: its converter (`join` reads no side files of it).
pub const FORMAT: Format = Format {
    converter: &Atif,
    side: None,
};

impl Converter for Atif {
    fn name(&self) -> &'static str {
        "atif"
    }

    fn raw_schemas(&self) -> &'static [&'static RawSchema] {
        static SCHEMAS: [&RawSchema; 3] = [&SCHEMA, &SCHEMA_V1_7, &SCHEMA_V1_8];
        &SCHEMAS
    }

    fn options(&self) -> &'static [&'static FormatOption] {
        &[&MERGE, &VERSION]
    }

    fn writer(&self) -> Option<fn(&Trajectory, &FormatOptions) -> Value> {
        Some(to_atif)
    }

    fn description(&self) -> &'static str {
        "ATIF v1.0-v1.8 trajectories (Harbor): steps with tool_calls and observation results, continuation files"
    }

    fn sniff(&self, first: &Value) -> bool {
        has_keys(first, &["schema_version", "steps"])
            && first["schema_version"]
                .as_str()
                .is_some_and(|v| v.starts_with("ATIF"))
    }

    fn open_source(
        &self,
        path: &str,
        opts: &ConvertOptions,
    ) -> Option<io::Result<Box<dyn RecordSource>>> {
        files::open(path, opts)
    }

    fn each_partial(
        &self,
        record: &RawRecord,
        _map: &FormatOptions,
        to: &mut PartialSink<'_>,
    ) -> Option<Result<(), Vec<Diagnostic>>> {
        Some(read::each_partial(record, to))
    }

    fn warnings(&self, record: &RawRecord) -> Vec<Diagnostic> {
        read::warnings(record)
    }
}

/// The keys of a step class that ATIF carries natively (and [`to_atif`] leaves out of
/// `extra.adp`).
fn carried(class: &str) -> &'static [&'static str] {
    match class {
        "api_action" => &["function", "kwargs", "tool_call_id"],
        "code_action" => &["content", "tool_call_id"],
        "message_action" => &["content", "reasoning_content"],
        "text_observation" => &["content", "tool_call_id"],
        _ => &["tool_call_id"],
    }
}
