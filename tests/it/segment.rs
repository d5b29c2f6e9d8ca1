//! Compaction segments of trajectories converted from compacted sessions in each reader's shape.

use std::path::{Path, PathBuf};

use serde_json::Value;
use trajkit::model::{Step, Trajectory};
use trajkit::segment::segments;

use crate::common::{convert, validate_adp};

fn fixture(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(path)
}

/// The segments of each trajectory converted from `file`, checked valid, with the first step of
/// each segment after a compaction (past the leading system steps) named.
fn segmented(file: &Path) -> Vec<(Vec<Trajectory>, Vec<Option<String>>)> {
    let (code, out, err) = convert(&[file], None, &[]);
    assert_eq!(code, 0, "{err}");
    out.into_iter()
        .map(|v| {
            let t: Trajectory = serde_json::from_value(v).expect("a trajectory");
            let segs = segments(t);
            let rows: Vec<Value> = segs
                .iter()
                .map(|s| serde_json::to_value(s).expect("serializes"))
                .collect();
            assert_eq!(validate_adp(&rows), 0, "{file:?}");
            let firsts = segs
                .iter()
                .map(|s| {
                    s.content
                        .iter()
                        .find(|step| !is_system(step))
                        .and_then(|step| match step {
                            Step::TextObservation(o) => o.name.clone(),
                            _ => None,
                        })
                })
                .collect();
            (segs, firsts)
        })
        .collect()
}

fn is_system(step: &Step) -> bool {
    matches!(step, Step::TextObservation(o) if o.name.as_deref() == Some("system"))
}

#[test]
fn droid_segments_start_from_the_summary_then_the_kept_messages() {
    let got = segmented(&fixture("droid/compacted.jsonl"));
    let (segs, firsts) = &got[0];
    assert_eq!(segs.len(), 2);
    assert_eq!(firsts[1].as_deref(), Some("compaction_summary"));
    let seg = &segs[1].details["segment"];
    assert_eq!(seg["kept"], serde_json::json!([2, 4]));
    assert_eq!(seg["summary"], "recorded");
    assert!(segs[1].id.ends_with("#segment-1"));
    // A session `/compress` started holds one segment, from its summary.
    let got = segmented(&fixture("droid/compressed.jsonl"));
    assert_eq!(got[0].0.len(), 1);
    assert_eq!(got[0].1[0].as_deref(), Some("compaction_summary"));
}

#[test]
fn qwen_code_and_copilot_segments_start_from_their_summary_step() {
    for file in [
        fixture("qwen_code/session.jsonl"),
        fixture("copilot-cli/events.jsonl"),
    ] {
        let got = segmented(&file);
        let cut: Vec<_> = got.iter().filter(|(s, _)| s.len() > 1).collect();
        assert!(!cut.is_empty(), "{file:?}: no compacted trajectory");
        for (segs, firsts) in cut {
            for (s, first) in segs.iter().zip(firsts).skip(1) {
                assert!(
                    matches!(
                        first.as_deref(),
                        Some("compaction_summary" | "compact_summary")
                    ),
                    "{}: starts with {first:?}",
                    s.id
                );
                assert_eq!(s.details["segment"]["summary"], "recorded");
            }
        }
    }
}

/// The texts of a segment's steps (calls by their link id), for comparing whole segments.
fn texts(t: &Trajectory) -> Vec<String> {
    t.content
        .iter()
        .map(|s| match s {
            Step::TextObservation(o) => o.content.clone(),
            Step::MessageAction(m) => m.content.clone(),
            other => format!(
                "{}:{}",
                other.class_name(),
                other.tool_call_id().unwrap_or("-")
            ),
        })
        .collect()
}

#[test]
fn claude_code_segment_starts_from_the_compact_summary() {
    let got = segmented(&fixture("segment/claude-code.jsonl"));
    let (segs, firsts) = &got[0];
    assert_eq!(segs.len(), 2);
    assert_eq!(
        texts(&segs[0]),
        [
            "Rename the config loader.",
            "api_action:t1",
            "src/config.rs:3",
            "Found one definition."
        ]
    );
    assert_eq!(firsts[1].as_deref(), Some("compact_summary"));
    assert_eq!(
        texts(&segs[1])[1..],
        ["api_action:t2", "edited", "Renamed to read_config."]
    );
    assert_eq!(segs[1].id, "cc-seg#segment-1");
    assert_eq!(segs[1].details["segment"]["of"], "cc-seg");
}

#[test]
fn codex_segment_is_the_replacement_history_then_what_follows() {
    let got = segmented(&fixture("segment/codex.jsonl"));
    let (segs, _) = &got[0];
    // The assistant text before the compaction stays in segment 0.
    assert_eq!(
        texts(&segs[0]),
        [
            "Sandbox: workspace-write.",
            "Count the TODOs.",
            "Let me search."
        ]
    );
    assert_eq!(
        texts(&segs[1]),
        [
            "Sandbox: workspace-write.",
            "Count the TODOs.",
            "The user asked to count TODOs; none counted yet.",
            "code_action:c1",
            "src/a.rs:2",
            "There are 2 TODOs."
        ]
    );
    assert_eq!(segs[1].details["segment"]["summary"], "recorded");
}

/// The trajectories converted from the Claude Code and Codex fixtures, as one ADP file.
pub fn compacted_adp(dir: &Path) -> PathBuf {
    let mut lines = Vec::new();
    for f in ["segment/claude-code.jsonl", "segment/codex.jsonl"] {
        let (code, out, err) = convert(&[&fixture(f)], None, &[]);
        assert_eq!(code, 0, "{err}");
        lines.extend(out.iter().map(Value::to_string));
    }
    let input = dir.join("in.jsonl");
    std::fs::write(&input, lines.join("\n") + "\n").expect("writes");
    input
}

#[test]
fn export_segments_writes_a_row_per_segment_and_keeps_a_session_in_one_split() {
    let dir = tempfile::tempdir().expect("tempdir");
    let input = compacted_adp(dir.path());
    let out = dir.path().join("out");
    let run = crate::common::trajkit()
        .args(["export", "--to", "adp", "--segments", "compaction"])
        .args(["--split", "train=0.5,validation=0.5", "-o"])
        .arg(&out)
        .arg(&input)
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{err}");
    assert!(
        err.contains("4 rows in (2 trajectories, 2 cut at compactions into 4 segments), 4 written"),
        "{err}"
    );
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(out.join("manifest.json")).expect("manifest"))
            .expect("json");
    assert_eq!(
        manifest["counts"]["segments"],
        serde_json::json!({"trajectories": 2, "cut": 2, "segments": 4})
    );
    assert_eq!(manifest["options"]["segments"], "compaction");
    // Each row's split is its session's: the two segments of a trajectory share a file.
    let mut split_of = std::collections::BTreeMap::new();
    for entry in std::fs::read_dir(out.join("data")).expect("data") {
        let path = entry.expect("entry").path();
        let split = path
            .file_name()
            .unwrap()
            .to_string_lossy()
            .split('-')
            .next()
            .unwrap()
            .to_owned();
        for row in crate::common::json_lines(&std::fs::read(&path).expect("reads")) {
            let id = row["id"].as_str().expect("an id").to_owned();
            let (session, n) = id.split_once("#segment-").expect("a segment id");
            assert!(n.parse::<u32>().is_ok(), "{id}");
            let first = split_of
                .entry(session.to_owned())
                .or_insert_with(|| split.clone());
            assert_eq!(*first, split, "{id}");
        }
    }
    assert_eq!(split_of.len(), 2);
}

#[test]
fn export_without_segments_writes_a_row_per_trajectory() {
    let dir = tempfile::tempdir().expect("tempdir");
    let input = compacted_adp(dir.path());
    let run = crate::common::trajkit()
        .args(["export", "--to", "openai", "-o"])
        .arg(dir.path().join("plain"))
        .arg(&input)
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(err.contains("2 trajectories in, 2 written"), "{err}");
}

/// The trajectories converted from `inputs` (given together, so that subagents are linked to
/// their calls), as one ADP file in `dir`.
fn adp_file(dir: &Path, inputs: &[&Path]) -> PathBuf {
    let (code, out, err) = convert(inputs, None, &[]);
    assert_eq!(code, 0, "{err}");
    let input = dir.join("in.jsonl");
    let text: String = out.iter().map(|t| format!("{t}\n")).collect();
    std::fs::write(&input, text).expect("writes");
    input
}

/// Exports `input` `--to adp` with `--segments mode` over two splits: each row by id with its
/// split, the summary line and the manifest.
fn export_split(
    dir: &Path,
    input: &Path,
    mode: &str,
) -> (
    std::collections::BTreeMap<String, (String, Value)>,
    String,
    Value,
) {
    let out = dir.join(format!("out-{}", mode.replace(',', "-")));
    let run = crate::common::trajkit()
        .args(["export", "--to", "adp", "--segments", mode])
        .args(["--split", "train=0.5,validation=0.5", "-o"])
        .arg(&out)
        .arg(input)
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&run.stderr).into_owned();
    assert!(run.status.success(), "{err}");
    let mut rows = std::collections::BTreeMap::new();
    for entry in std::fs::read_dir(out.join("data")).expect("data") {
        let path = entry.expect("entry").path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let split = name.split('-').next().unwrap().to_owned();
        for row in crate::common::json_lines(&std::fs::read(&path).expect("reads")) {
            let id = row["id"].as_str().expect("an id").to_owned();
            rows.insert(id, (split.clone(), row));
        }
    }
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(out.join("manifest.json")).expect("manifest"))
            .expect("json");
    (rows, err, manifest)
}

/// The first user text of a row, and the kwargs of the call `call` of another.
fn first_user_text(row: &Value) -> &str {
    row["content"]
        .as_array()
        .expect("steps")
        .iter()
        .find(|s| s["source"] == "user")
        .and_then(|s| s["content"].as_str())
        .expect("a user text")
}

fn call_kwargs<'a>(row: &'a Value, call: &str) -> &'a Value {
    &row["content"]
        .as_array()
        .expect("steps")
        .iter()
        .find(|s| s["class_"] == "api_action" && s["tool_call_id"] == call)
        .expect("the call")["kwargs"]
}

#[test]
fn subagents_link_a_claude_code_subagent_to_the_task_call_that_prompted_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let input = adp_file(
        dir.path(),
        &[&crate::common::sample_data().join("claude-code")],
    );
    let (rows, err, manifest) = export_split(dir.path(), &input, "subagents");
    let parent_id = "7f3c2a10-0000-4000-8000-000000000001";
    let (parent_split, parent) = &rows[parent_id];
    let (split, sub) = &rows[&format!("{parent_id}/agent-a1f0c3d")];
    assert_eq!(
        sub["details"]["subagent"],
        serde_json::json!({"parent": parent_id, "call": "toolu_5", "prompt": "recorded"})
    );
    // The branch opens with the prompt the parent's Task call gave it, token for token.
    assert_eq!(
        first_user_text(sub),
        call_kwargs(parent, "toolu_5")["prompt"]
    );
    assert_eq!(split, parent_split);
    assert!(parent["details"].get("subagent").is_none());
    assert!(
        err.contains("(2 trajectories, 1 subagent branches), 2 written"),
        "{err}"
    );
    assert_eq!(manifest["counts"]["segments"]["subagents"], 1);
    assert_eq!(manifest["options"]["segments"], "subagents");
}

/// A 2.1.x project without sidecars (`<session>/subagents/agent-<id>.jsonl`): the subagent is
/// linked to the parent's `Task` call and its prompt, whether the project is read whole or its
/// files are given one by one.
#[test]
fn subagents_link_a_claude_code_subagent_read_apart_from_its_session() {
    let project = fixture("segment/claude-code-project");
    let session = project.join("cc-proj.jsonl");
    let agent = project.join("cc-proj/subagents/agent-b41c9e2.jsonl");
    for inputs in [vec![project.as_path()], vec![&agent, &session]] {
        let dir = tempfile::tempdir().expect("tempdir");
        let input = adp_file(dir.path(), &inputs);
        let (rows, err, _) = export_split(dir.path(), &input, "subagents");
        let (parent_split, parent) = &rows["cc-proj"];
        let (split, sub) = &rows["cc-proj/agent-b41c9e2"];
        assert_eq!(
            sub["details"]["subagent"],
            serde_json::json!({"parent": "cc-proj", "call": "toolu_task1", "prompt": "recorded"}),
            "{inputs:?}"
        );
        assert_eq!(
            first_user_text(sub),
            call_kwargs(parent, "toolu_task1")["prompt"]
        );
        assert_eq!(split, parent_split);
        assert!(
            err.contains("(2 trajectories, 1 subagent branches)"),
            "{err}"
        );
    }
}

#[test]
fn both_modes_cut_a_codex_subagent_thread_at_its_compaction_and_keep_it_with_its_parent() {
    let dir = tempfile::tempdir().expect("tempdir");
    let input = adp_file(dir.path(), &[&fixture("segment/codex-subagent")]);
    let (rows, err, manifest) = export_split(dir.path(), &input, "subagents,compaction");
    let parent_id = "0199a0c1-0000-7000-8000-00000000aa01";
    let child = "0199a0c1-0000-7000-8000-00000000bb02";
    let (parent_split, parent) = &rows[parent_id];
    let spawn = call_kwargs(parent, "call_spawn_1");
    for n in 0..2 {
        let (split, seg) = &rows[&format!("{child}#segment-{n}")];
        assert_eq!(split, parent_split, "segment {n}");
        assert_eq!(
            seg["details"]["subagent"],
            serde_json::json!({"parent": parent_id, "call": null, "prompt": "recorded"})
        );
        assert_eq!(seg["details"]["segment"]["of"], child);
        // Each segment starts from the spawn_agent message (the replacement history keeps it).
        assert_eq!(first_user_text(seg), spawn["message"]);
    }
    assert!(
        err.contains("3 rows in (2 trajectories, 1 cut at compactions into 2 segments, 1 subagent branches), 3 written"),
        "{err}"
    );
    assert_eq!(
        manifest["counts"]["segments"],
        serde_json::json!({"trajectories": 2, "cut": 1, "segments": 2, "subagents": 1})
    );
    // The spelling the mode is written with.
    assert_eq!(manifest["options"]["segments"], "compaction,subagents");
}

#[test]
fn subagents_link_an_atif_embedded_subagent_and_leave_other_trajectories_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let input = adp_file(dir.path(), &[&crate::common::sample_data().join("atif")]);
    let (rows, _, _) = export_split(dir.path(), &input, "subagents");
    let (split, sub) = &rows["atif-demo-1/sub-1"];
    assert_eq!(
        sub["details"]["subagent"],
        serde_json::json!({"parent": "atif-demo-1", "call": null, "prompt": "recorded"})
    );
    assert_eq!(split, &rows["atif-demo-1"].0);
    let linked = rows
        .values()
        .filter(|(_, r)| r["details"].get("subagent").is_some())
        .count();
    assert_eq!(linked, 1);
}

#[test]
fn subagents_of_the_corpus_sessions_are_linked_and_kept_with_their_parents() {
    let Some(root) = crate::common::agent_logs() else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    // Kimi CLI: two ReadContext subagents, each named by the call whose result names its file.
    let input = adp_file(dir.path(), &[&root.join("kimi-cli")]);
    let (rows, _, _) = export_split(dir.path(), &input, "subagents");
    let session = "kimi-cli__531d195b-6436-426e-b010-4bf723a992de";
    for (n, call) in [(1, "ReadContext:1"), (2, "ReadContext:5")] {
        let (split, sub) = &rows[&format!("{session}_read_{n}")];
        assert_eq!(sub["details"]["subagent"]["parent"], session);
        assert_eq!(sub["details"]["subagent"]["call"], call);
        assert_eq!(sub["details"]["subagent"]["prompt"], "recorded");
        assert_eq!(split, &rows[session].0);
    }
    // Hermes: delegate_task subagents are sessions of their own, each with its parent's split.
    let dir = tempfile::tempdir().expect("tempdir");
    let input = adp_file(dir.path(), &[&root.join("hermes")]);
    let (rows, err, _) = export_split(dir.path(), &input, "subagents");
    let subs: Vec<_> = rows
        .values()
        .filter_map(|(split, r)| Some((split, r["details"].get("subagent")?)))
        .collect();
    assert!(subs.len() >= 4, "{err}");
    for (split, link) in subs {
        let parent = link["parent"].as_str().expect("a parent");
        if let Some((parent_split, _)) = rows.get(parent) {
            assert_eq!(split, parent_split, "{parent}");
        }
        assert_eq!(link["prompt"], "recorded");
    }
    // Claude Code: a subagent file read alone still names its session.
    let dir = tempfile::tempdir().expect("tempdir");
    let input = adp_file(
        dir.path(),
        &[&root.join("claude-code/spotter__agent-aac57f5.jsonl")],
    );
    let (rows, _, _) = export_split(dir.path(), &input, "subagents");
    let (_, sub) = rows.values().next().expect("a row");
    assert_eq!(
        sub["details"]["subagent"]["parent"],
        "ae4a77f8-aedd-4bc1-888f-c94edc91af04"
    );
}

#[test]
fn report_shows_each_compacted_sessions_segments_with_the_tokens_the_export_counts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let input = adp_file(
        dir.path(),
        &[
            &fixture("segment/claude-code.jsonl"),
            &fixture("segment/codex.jsonl"),
            &fixture("segment/codex-subagent"),
        ],
    );
    let template = fixture("templates/generation.jinja");
    let tokenizer = fixture("templates/words.tokenizer.json");
    let tokens = [
        "--chat-template".as_ref(),
        template.as_os_str(),
        "--tokenizer".as_ref(),
        tokenizer.as_os_str(),
    ];
    let page_path = dir.path().join("report.html");
    let run = crate::common::trajkit()
        .args(["report", "-q", "--context", "40", "-o"])
        .arg(&page_path)
        .args(tokens)
        .arg(&input)
        .output()
        .expect("runs");
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let page = std::fs::read_to_string(&page_path).expect("page");
    assert!(page.contains("<h2 id=\"segments\">Compaction segments</h2>"));
    let start = page
        .find("id=\"trajkit-report-data\">")
        .expect("data block");
    let body = &page[start + "id=\"trajkit-report-data\">".len()..];
    let data: Value =
        serde_json::from_str(&body[..body.find("</script>").expect("end")]).expect("json");
    let seg = &data["profile"]["segments"];
    assert_eq!(seg["compacted"], 3);
    assert_eq!(seg["segments"], 6);
    assert_eq!(seg["context"], 40);
    // Each segment's tokens are those of its row in a token-counting export.
    let out = dir.path().join("sharegpt");
    let run = crate::common::trajkit()
        .args([
            "export",
            "--to",
            "sharegpt",
            "--segments",
            "compaction",
            "-o",
        ])
        .arg(&out)
        .args(tokens)
        .arg(&input)
        .output()
        .expect("runs");
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let mut counted = std::collections::BTreeMap::new();
    for entry in std::fs::read_dir(out.join("data")).expect("data") {
        let path = entry.expect("entry").path();
        for row in crate::common::json_lines(&std::fs::read(&path).expect("reads")) {
            counted.insert(
                row["id"].as_str().expect("id").to_owned(),
                row["n_tokens"].clone(),
            );
        }
    }
    let mut over = 0;
    for session in seg["sessions"].as_array().expect("sessions") {
        let id = session["id"].as_str().expect("id");
        let tokens = session["tokens"].as_array().expect("tokens");
        assert_eq!(tokens.len(), 2, "{id}");
        for (n, t) in tokens.iter().enumerate() {
            assert_eq!(
                t,
                &counted[&format!("{id}#segment-{n}")],
                "{id} segment {n}"
            );
            over += usize::from(t.as_u64().expect("a count") > 40);
        }
    }
    assert_eq!(seg["segments_over_context"], over);
    // A dataset without a compacted session has no such section.
    let dir = tempfile::tempdir().expect("tempdir");
    let input = adp_file(
        dir.path(),
        &[&crate::common::sample_data().join("claude-code")],
    );
    let plain = dir.path().join("plain.html");
    let run = crate::common::trajkit()
        .args(["report", "-q", "-o"])
        .arg(&plain)
        .arg(&input)
        .output()
        .expect("runs");
    assert!(run.status.success());
    let page = std::fs::read_to_string(&plain).expect("page");
    assert!(!page.contains("id=\"segments\""));
}

/// The rows `trajkit export --to TARGET --segments MODE` writes for the trajectories converted
/// from `inputs` (given together), in order, over one split.
fn rows_of(inputs: &[&Path], target: &str, mode: &str) -> Vec<Value> {
    rows_with(inputs, target, mode, &[])
}

/// [`rows_of`] with more export arguments.
fn rows_with(inputs: &[&Path], target: &str, mode: &str, args: &[&std::ffi::OsStr]) -> Vec<Value> {
    let dir = tempfile::tempdir().expect("tempdir");
    let input = adp_file(dir.path(), inputs);
    let out = dir.path().join("out");
    let run = crate::common::trajkit()
        .args(["export", "--to", target, "--segments", mode, "-o"])
        .arg(&out)
        .args(args)
        .arg(&input)
        .output()
        .expect("runs");
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let mut files: Vec<PathBuf> = std::fs::read_dir(out.join("data"))
        .expect("data")
        .map(|e| e.expect("entry").path())
        .collect();
    files.sort();
    files
        .iter()
        .flat_map(|f| crate::common::json_lines(&std::fs::read(f).expect("reads")))
        .collect()
}

/// A Terminus-2 run cut by context summarization (Harbor's `trajectory.json` naming
/// `trajectory.cont-1.json`, which starts with the context it copies): read together, one
/// trajectory that `--segments compaction` cuts where the continuation starts. Each row equals,
/// message for message (so token for token under any chat template), the row of the file
/// that holds what the model saw: the first file for segment 0, the continuation file (read
/// alone, its copied context included and not trained on) for segment 1.
#[test]
fn an_atif_continuation_is_a_segment_starting_from_the_context_it_copies() {
    let dir = fixture("segment/atif");
    let (first, cont) = (
        dir.join("trajectory.json"),
        dir.join("trajectory.cont-1.json"),
    );
    // The rows but their ids (`<id>#segment-<n>` against the files' own).
    let rows = |inputs: &[&Path], target: &str, mode: &str| -> Vec<Value> {
        let mut rows = rows_of(inputs, target, mode);
        for r in &mut rows {
            r.as_object_mut().expect("a row").remove("id");
        }
        rows
    };
    for target in ["openai", "hf", "sharegpt"] {
        let segmented = rows(&[&dir], target, "compaction");
        assert_eq!(segmented.len(), 2, "{target}");
        let whole = rows(&[&first], target, "none");
        let continued = rows(&[&cont], target, "none");
        assert_eq!(segmented, [&whole[..], &continued[..]].concat(), "{target}");
    }
    let adp = rows_of(&[&dir], "adp", "compaction");
    let seg = &adp[1]["details"]["segment"];
    assert_eq!(seg["summary"], "recorded");
    assert_eq!(seg["excluded_from_training"], serde_json::json!([1, 2, 3]));
    assert_eq!(adp[1]["id"], "run-42#segment-1");
}

/// An OpenHands run condensed once (a `condensation` action forgetting events 3 to 4, its
/// summary at offset 2 of the events kept): the segment after it is OpenHands' view of the
/// history at that point, step for step: the events kept (the task, the later call and its
/// result), the summary where the view puts it (after the system and task events), then the
/// steps that followed.
#[test]
fn an_openhands_condensation_starts_from_the_view_it_left() {
    let got = segmented(&fixture("segment/openhands-condensed.json"));
    let (segs, _) = &got[0];
    assert_eq!(segs.len(), 2);
    let task = "Fix the failing test in tests/test_calc.py.";
    let cat = "def add(a, b):\n    return a - b";
    assert_eq!(
        texts(&segs[0]),
        [
            task,
            "code_action:toolu_01",
            "F.\nFAILED tests/test_calc.py::test_add - assert -1 == 3\n1 failed, 1 passed",
            "code_action:toolu_02",
            cat
        ]
    );
    assert_eq!(
        texts(&segs[1]),
        [
            task,
            "USER_CONTEXT: fix the failing test in tests/test_calc.py\nTESTS: test_add fails: assert -1 == 3",
            "code_action:toolu_02",
            cat,
            "api_action:toolu_03",
            "The file /workspace/calc.py has been edited.",
            "<finish> add now adds; the test passes. </finish>"
        ]
    );
    let seg = &segs[1].details["segment"];
    assert_eq!(seg["summary"], "recorded");
    assert_eq!(seg["steps"], serde_json::json!([5, 8]));
    // The system prompt, an event of no step, opens every row from the details.
    assert!(segs[1].details["openhands"]["system_prompt"].is_string());
}

/// The rows of a segmented export of `compacted` and, for each segment after the first, those of
/// a file holding only what the agent gave the model from that compaction on (`seen`, written
/// in the agent's own format), all without their ids: ShareGPT rows with their tokens counted
/// under a chat template, so equal rows are equal token for token.
fn compare_with_what_was_seen(compacted: &Path, seen: &[Vec<String>]) {
    let template = fixture("templates/generation.jinja");
    let tokenizer = fixture("templates/words.tokenizer.json");
    let args = [
        "--chat-template".as_ref(),
        template.as_os_str(),
        "--tokenizer".as_ref(),
        tokenizer.as_os_str(),
    ];
    let strip = |mut rows: Vec<Value>| -> Vec<Value> {
        for r in &mut rows {
            r.as_object_mut().expect("a row").remove("id");
        }
        rows
    };
    let segmented = strip(rows_with(&[compacted], "sharegpt", "compaction", &args));
    assert_eq!(segmented.len(), seen.len() + 1, "{compacted:?}");
    let dir = tempfile::tempdir().expect("tempdir");
    for (k, lines) in seen.iter().enumerate() {
        let file = dir.path().join(format!("seen-{k}.jsonl"));
        std::fs::write(&file, lines.join("\n") + "\n").expect("writes");
        let whole = strip(rows_with(&[&file], "sharegpt", "none", &args));
        assert_eq!(whole.len(), 1);
        assert!(whole[0]["n_tokens"].as_u64().is_some_and(|n| n > 0));
        assert_eq!(
            segmented[k + 1],
            whole[0],
            "{compacted:?} segment {}",
            k + 1
        );
    }
}

/// The lines of a fixture, as text.
fn lines_of(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .expect("reads")
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Claude Code goes on from the compact summary it records (`isCompactSummary`): the segment
/// after the boundary equals the session as Claude Code resumes it, the summary line first.
#[test]
fn a_claude_code_segment_is_token_for_token_what_the_model_saw() {
    let path = fixture("segment/claude-code.jsonl");
    let lines = lines_of(&path);
    let boundary = lines
        .iter()
        .position(|l| l.contains("\"compact_boundary\""))
        .expect("a boundary");
    compare_with_what_was_seen(&path, &[lines[boundary + 1..].to_vec()]);
}

/// Codex goes on from the `compacted` line's replacement history: the segment after it equals
/// a rollout that starts with that history (as response items) and goes on as the session did.
#[test]
fn a_codex_segment_is_token_for_token_what_the_model_saw() {
    let path = fixture("segment/codex.jsonl");
    let lines = lines_of(&path);
    let at = lines
        .iter()
        .position(|l| l.contains("\"type\":\"compacted\""))
        .expect("a compaction");
    let compacted: Value = serde_json::from_str(&lines[at]).expect("json");
    let mut seen = vec![lines[0].clone()];
    for item in compacted["payload"]["replacement_history"]
        .as_array()
        .expect("a history")
    {
        seen.push(
            serde_json::json!({"timestamp": compacted["timestamp"], "type": "response_item",
                "payload": item})
            .to_string(),
        );
    }
    seen.extend(lines[at + 1..].iter().cloned());
    compare_with_what_was_seen(&path, &[seen]);
}

/// A summary OpenHands recorded as a `condense` observation (no `condensation` action says
/// what it kept): the segment after it starts from the summary.
#[test]
fn an_openhands_condense_observation_starts_a_segment_from_its_summary() {
    let text = std::fs::read_to_string(fixture("segment/openhands-condensed.json")).expect("reads");
    let mut events: Vec<Value> = serde_json::from_str(&text).expect("json");
    events[7] = serde_json::json!({"id": 7, "timestamp": "2026-04-02T08:00:07", "source": "agent",
        "message": "Summary", "observation": "condense", "content": "The test fails: add subtracts.",
        "extras": {}});
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("condense.json");
    std::fs::write(&file, serde_json::to_string(&events).expect("json")).expect("writes");
    let got = segmented(&file);
    let (segs, firsts) = &got[0];
    assert_eq!(segs.len(), 2);
    assert_eq!(firsts[1].as_deref(), Some("compaction_summary"));
    assert_eq!(
        texts(&segs[1])[..2],
        ["The test fails: add subtracts.", "api_action:toolu_03"]
    );
    assert_eq!(segs[1].details["segment"]["summary"], "recorded");
}
