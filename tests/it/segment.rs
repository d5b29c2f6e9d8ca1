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
