//! A pipeline table and the command-line flags it stands for make the same stage config
//! (`[[join]]` and `trajkit join`, `[[export]]` and `trajkit export`): one definition, read two
//! ways.

use clap::{Args, Command};
use serde_json::{json, Map, Value};

use super::export::ExportConfig;
use super::join::JoinConfig;

fn command<A: Args>() -> Command {
    A::augment_args(Command::new("stage").no_binary_name(true))
}

/// The arguments a table stands for: `--key=value` per key (a flag for `true`, one per
/// item of an array).
fn argv(table: &Map<String, Value>) -> Vec<String> {
    let mut argv = Vec::new();
    for (key, value) in table {
        let flag = format!("--{}", key.replace('_', "-"));
        match value {
            Value::Bool(true) => argv.push(flag),
            Value::Array(items) => argv.extend(
                items
                    .iter()
                    .map(|i| format!("{flag}={}", i.as_str().unwrap_or_default())),
            ),
            Value::String(s) => argv.push(format!("{flag}={s}")),
            other => argv.push(format!("{flag}={other}")),
        }
    }
    argv
}

/// A table and the flags it stands for make the same config: the same names, values and
/// defaults.
fn agree<C>(table: Value)
where
    C: Args + clap::FromArgMatches + serde::Serialize + serde::de::DeserializeOwned,
{
    let from_table: C = serde_json::from_value(table.clone()).expect("the table reads"); // ok: test code
    let map = table.as_object().expect("a table"); // ok: test code
    let matches = command::<C>()
        .try_get_matches_from(argv(map))
        .expect("the flags parse"); // ok: test code
    let from_flags = C::from_arg_matches(&matches).expect("the flags make a config"); // ok: test code
    assert_eq!(json!(from_flags), json!(from_table), "{table}");
}

#[test]
fn pipeline_tables_and_flags_make_the_same_stage_configs() {
    agree::<JoinConfig>(json!({"rewards": ["r.jsonl"]}));
    agree::<JoinConfig>(json!({
        "reflections": ["a", "b"], "reflections_from": "ralph", "rewards": ["r"],
        "rewards_from": "generic", "key": "/instance_id", "reflections_key": "{task}#{n:03}",
        "rewards_key": "/id", "trajectory_key": "/details/x", "value": "/v",
        "components": "/c", "outcome": "/o", "step_rewards": "/s", "text": "/t",
        "memory_window": 3, "unmatched": "drop", "orphans": "reject",
        "duplicates": "last", "conflicts": "replace"
    }));
    agree::<ExportConfig>(json!({"to": "hf", "output": "o"}));
    agree::<ExportConfig>(json!({
        "to": "openai", "output": "o", "thoughts": "drop", "description_as": "thought",
        "train_on": "last", "code_tool": ["r=run:src", "*=x"], "tools": "t.json",
        "infer_tools": "trajectory", "system_prompt": "p.txt", "inject_reflections": true,
        "split": "train=0.9,test=0.1", "shard_rows": 7, "shard_bytes": 1000,
        "row_group_bytes": 500, "compress": "zstd", "zstd_level": 9, "min_reward": 0.5,
        "outcome": ["success", "partial_success"], "max_steps": 40, "max_chars": 9000,
        "dedup": true, "force": true
    }));
}
