//! What a reader leaves out is never silent: counted in `details.source.left_out`, printed per
//! input by `convert` and `run`, warned about when most of a session is lost, and rejected with
//! `--strict` (`[convert] strict`). The fixtures are written for these tests: Claude Code
//! sessions (one with a user line whose `message` is not an object, one whose conversation is
//! mostly an inline sidechain), and for every other reader a small file of its format with
//! something in it that no step holds.

use std::path::PathBuf;

use serde_json::Value;

use crate::common::{convert, json_lines, trajkit};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/left_out")
        .join(name)
}

#[test]
fn a_wrong_typed_line_is_counted_printed_and_kept_out_without_strict() {
    let file = fixture("wrong-typed-message.jsonl");
    let (code, out, stderr) = convert(&[&file], None, &[]);
    assert_eq!(code, 0, "{stderr}");
    let left = &out[0]["details"]["source"]["left_out"];
    assert_eq!(left["wrong_typed"], 1, "{left}");
    assert_eq!(left["messages"], serde_json::json!({"in": 4, "kept": 3}));
    assert_eq!(left["where"], "details.claude_code");
    assert_eq!(
        (
            left["first"]["line"].as_u64(),
            left["first"]["pointer"].as_str()
        ),
        (Some(3), Some("/message"))
    );
    assert!(
        stderr.contains("wrong-typed-message.jsonl: 1 wrong-typed value, 3 of 4 messages kept: details.claude_code"),
        "{stderr}"
    );
}

#[test]
fn strict_rejects_a_record_with_a_wrong_typed_line_at_its_pointer() {
    let file = fixture("wrong-typed-message.jsonl");
    let (code, out, stderr) = convert(&[&file], None, &["--strict"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(out.is_empty());
    assert!(
        stderr.contains("error[left-out]") && stderr.contains("/message: --strict"),
        "{stderr}"
    );
    assert!(stderr.contains("on line 3"), "{stderr}");
}

#[test]
fn a_trajectory_keeping_under_half_of_its_messages_is_warned_about() {
    let file = fixture("mostly-sidechain.jsonl");
    let (code, out, stderr) = convert(&[&file], None, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(out.len(), 1);
    assert!(
        stderr.contains("warning[left-out]")
            && stderr.contains("keeps 2 of the source's 7 conversation messages: 5 lines left out"),
        "{stderr}"
    );
}

/// A pipeline's `[convert] strict = true` rejects as `--strict` does, and `run.json` records
/// what was left out of the trajectories written, per input.
#[test]
fn a_pipeline_reads_strict_and_records_left_out_per_input() {
    let tmp = tempfile::tempdir().expect("tmp");
    let pipeline = |strict: bool| {
        format!(
            "[[input]]\npath = {:?}\n[convert]\nstrict = {strict}\n[validate]\nmax_reject_rate = 1.0\n[[export]]\nto = \"adp\"\noutput = {:?}\n",
            fixture("wrong-typed-message.jsonl"),
            tmp.path().join(format!("out-{strict}"))
        )
    };
    for strict in [false, true] {
        let file = tmp.path().join(format!("p-{strict}.toml"));
        std::fs::write(&file, pipeline(strict)).expect("write");
        let out = trajkit().arg("run").arg(&file).output().expect("runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        let run: Value = serde_json::from_slice(
            &std::fs::read(tmp.path().join(format!("out-{strict}/run.json"))).expect("run.json"),
        )
        .expect("JSON");
        let input = &run["summary"]["inputs"][0];
        assert_eq!(input["rejected"], u64::from(strict), "{run}");
        assert!(stderr.contains("1 wrong-typed value"), "{stderr}");
        if strict {
            // The rejected record says why; nothing of it is counted as written.
            assert!(input["left_out"].is_null(), "{run}");
            assert!(stderr.contains("error[left-out]"), "{stderr}");
        } else {
            assert_eq!(input["left_out"]["wrong_typed"], 1, "{run}");
        }
        let written = std::fs::read_dir(tmp.path().join(format!("out-{strict}/data")))
            .expect("data")
            .map(|e| json_lines(&std::fs::read(e.expect("entry").path()).expect("read")).len())
            .sum::<usize>();
        assert_eq!(written, usize::from(!strict));
    }
}

/// Converts `name` (read `--from from`) and returns its one trajectory's `left_out` and
/// stderr, after checking that `--strict` rejects it exactly when `lossy` (an unmapped value or
/// a wrong-typed line) and otherwise writes the same trajectory.
fn left_out_of(name: &str, from: &str, lossy: bool) -> (Value, String) {
    let file = fixture(name);
    let (code, out, stderr) = convert(&[&file], Some(from), &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(out.len(), 1, "{stderr}");
    let left = out[0]["details"]["source"]["left_out"].clone();
    let (strict_code, strict_out, strict_err) = convert(&[&file], Some(from), &["--strict"]);
    if lossy {
        assert_eq!(strict_code, 1, "{strict_err}");
        assert!(
            strict_out.is_empty() && strict_err.contains("error[left-out]"),
            "{strict_err}"
        );
    } else {
        assert_eq!(strict_code, 0, "{strict_err}");
        assert_eq!(strict_out, out);
    }
    (left, stderr)
}

/// A Gemini CLI log: a notice, the CLI's repeated copy of a call's results and a rewound
/// message are lines left out; a line of no known kind is unmapped.
#[test]
fn gemini_cli_counts_notices_repeated_results_rewinds_and_unknown_lines() {
    let (left, stderr) = left_out_of("gemini-cli-session.jsonl", "gemini-cli", true);
    assert_eq!(
        (&left["lines"], &left["values"], &left["messages"]),
        (
            &3.into(),
            &1.into(),
            &serde_json::json!({"in": 4, "kept": 3})
        ),
        "{left}"
    );
    assert_eq!(left["first"]["line"], 9, "{left}");
    assert!(
        stderr.contains(
            "3 lines left out, 1 value unmapped, 3 of 4 messages kept: details.gemini_cli"
        ),
        "{stderr}"
    );
}

/// An Inspect log: an audio part no step holds is a block; a part without a type is unmapped,
/// at its place in the log.
#[test]
fn inspect_counts_parts_no_step_holds() {
    let (left, stderr) = left_out_of("inspect-log.json", "inspect", true);
    assert_eq!(
        (&left["blocks"], &left["values"]),
        (&1.into(), &1.into()),
        "{left}"
    );
    assert_eq!(
        left["first"]["pointer"], "/samples/0/messages/0/content/2",
        "{left}"
    );
    assert!(
        stderr.contains("1 value unmapped, 1 block no step holds: details.inspect"),
        "{stderr}"
    );
}

/// ATIF: an audio part no step holds is a block (the schema checks the types, so nothing is
/// unmapped and `--strict` keeps the trajectory).
#[test]
fn atif_counts_audio_parts() {
    let (left, stderr) = left_out_of("atif-audio.trajectory.json", "atif", false);
    assert_eq!(left["blocks"], 1, "{left}");
    assert!(
        stderr.contains("1 block no step holds: details.atif"),
        "{stderr}"
    );
}

/// ATIF continuation files merged: the copied context a continuation repeats is lines left out.
#[test]
fn atif_counts_the_copied_context_of_a_continuation() {
    let file = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("sample_data/atif");
    let (code, out, stderr) = convert(&[&file], Some("atif"), &[]);
    assert_eq!(code, 0, "{stderr}");
    let merged = out
        .iter()
        .find(|t| t["details"]["atif"]["continuations"].is_array())
        .expect("the merged chain");
    let copied = merged["details"]["atif"]["continuations"][0]["copied_steps"]
        .as_array()
        .map_or(0, Vec::len) as u64;
    assert!(copied > 0);
    assert_eq!(merged["details"]["source"]["left_out"]["lines"], copied);
}

/// mini-swe-agent: the `exit` message is bookkeeping (a line left out); a message of a role it
/// does not map is unmapped.
#[test]
fn mini_swe_agent_counts_the_exit_and_unknown_roles() {
    let (left, stderr) = left_out_of("mini-swe-agent-run.traj.json", "mini-swe-agent", true);
    assert_eq!(
        (&left["lines"], &left["values"]),
        (&1.into(), &1.into()),
        "{left}"
    );
    assert_eq!(left["first"]["pointer"], "/messages/4", "{left}");
    assert!(
        stderr.contains("1 line left out, 1 value unmapped: details.mini_swe_agent"),
        "{stderr}"
    );
}

/// SWE-agent: a demonstration in the history (as in SWE-agent's own recorded runs) is a line
/// left out; nothing is unmapped, so `--strict` keeps the run.
#[test]
fn swe_agent_counts_demonstrations() {
    let (left, stderr) = left_out_of("swe-agent-demo.traj", "swe-agent", false);
    assert_eq!(left["lines"], 1, "{left}");
    assert!(
        stderr.contains("1 line left out: details.swe_agent"),
        "{stderr}"
    );
}

/// An OpenAI chat with tool calls: an audio part of the user and a refusal part of the model
/// are blocks no step holds (the raw schema gives every part a type, so none is unmapped).
#[test]
fn openai_counts_parts_no_step_holds() {
    let (left, stderr) = left_out_of("openai-chat.jsonl", "openai", false);
    assert_eq!(left["blocks"], 2, "{left}");
    assert!(
        stderr.contains("2 blocks no step holds: details.openai"),
        "{stderr}"
    );
}

/// An OpenHands event stream: the controller's state change is a line left out.
#[test]
fn openhands_counts_state_events() {
    let (left, stderr) = left_out_of("openhands-events.jsonl", "openhands", false);
    assert_eq!(left["lines"], 1, "{left}");
    assert!(
        stderr.contains("1 line left out: details.openhands"),
        "{stderr}"
    );
}

/// A memabra trace: its `task_received` event is a line left out; a completion whose answer is
/// under a key the reader does not read is unmapped.
#[test]
fn memabra_counts_events_no_step_holds() {
    let (left, stderr) = left_out_of("memabra-trace.jsonl", "memabra", true);
    assert_eq!(
        (&left["lines"], &left["values"]),
        (&1.into(), &1.into()),
        "{left}"
    );
    assert_eq!(left["first"]["pointer"], "/events/3/payload", "{left}");
    assert!(
        stderr.contains("1 line left out, 1 value unmapped: details.memabra"),
        "{stderr}"
    );
}

/// A Ralph attempt: an action whose `params` are not an object is a wrong-typed value.
#[test]
fn ralph_counts_wrong_typed_action_keys() {
    let (left, stderr) = left_out_of("ralph-memory", "ralph", true);
    assert_eq!(left["wrong_typed"], 1, "{left}");
    assert_eq!(left["first"]["pointer"], "/actions/1/params", "{left}");
    assert!(
        stderr.contains("1 wrong-typed value: details.ralph"),
        "{stderr}"
    );
}

/// LedgerMind: an event of a kind no step holds (a heartbeat) is a line left out.
#[test]
fn ledgermind_counts_events_of_kinds_no_step_holds() {
    let (left, stderr) = left_out_of("ledgermind/events.jsonl", "ledgermind", false);
    assert_eq!(left["lines"], 1, "{left}");
    assert!(
        stderr.contains("1 line left out: details.ledgermind"),
        "{stderr}"
    );
}

/// A declarative spec: a turn of a role the spec drops is a line left out (not kept).
#[test]
fn a_spec_counts_the_turns_it_drops() {
    let spec = fixture("spec/helpdesk.toml");
    let spec = spec.to_str().expect("utf-8 path");
    let data = fixture("spec/cases.jsonl");
    let (code, out, stderr) = convert(&[&data], None, &["--spec", spec]);
    assert_eq!(code, 0, "{stderr}");
    let left = &out[0]["details"]["source"]["left_out"];
    assert_eq!(
        (&left["lines"], &left["where"]),
        (&1.into(), &"spec helpdesk".into()),
        "{left}"
    );
    assert!(
        stderr.contains("1 line left out: spec helpdesk"),
        "{stderr}"
    );
    let (code, strict, _) = convert(&[&data], None, &["--spec", spec, "--strict"]);
    assert_eq!((code, strict), (0, out));
}
