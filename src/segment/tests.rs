use serde_json::json;

use super::*;

fn user(text: &str) -> Step {
    Step::user_text(text)
}

fn env(name: &str, text: &str) -> Step {
    Step::environment_text(Some(name.into()), text)
}

fn call(id: &str) -> Step {
    Step::api("f", JsonObject::new(), None).with_tool_call_id(id)
}

fn result(id: &str) -> Step {
    env("f", "out").with_tool_call_id(id)
}

fn reply(text: &str) -> Step {
    Step::message(text, None)
}

fn traj(format: &str, content: Vec<Step>, compactions: Value) -> Trajectory {
    let key = format.replace('-', "_");
    let details = json!({"source": {"format": format}, key: {"compactions": compactions}});
    let Value::Object(details) = details else {
        unreachable!()
    };
    Trajectory::new("t".into(), content, details)
}

fn texts(t: &Trajectory) -> Vec<String> {
    t.content
        .iter()
        .map(|s| match s {
            Step::TextObservation(o) => {
                format!("{}:{}", o.name.as_deref().unwrap_or("-"), o.content)
            }
            Step::MessageAction(m) => format!("reply:{}", m.content),
            Step::ApiAction(a) => format!("call:{}", a.tool_call_id.as_deref().unwrap_or("-")),
            other => other.class_name().to_owned(),
        })
        .collect()
}

#[test]
fn modes_parse_by_name() {
    assert_eq!("none".parse::<Mode>(), Ok(Mode::None));
    assert_eq!("compaction".parse::<Mode>(), Ok(Mode::Compaction));
    assert_eq!("subagents".parse::<Mode>(), Ok(Mode::Subagents));
    assert_eq!("compaction,subagents".parse::<Mode>(), Ok(Mode::Both));
    assert_eq!("subagents,compaction".parse::<Mode>(), Ok(Mode::Both));
    assert_eq!(Mode::Both.name(), "compaction,subagents");
    assert!("compaction+subagents".parse::<Mode>().is_err());
}

#[test]
fn rows_lend_the_details_and_give_them_back_in_order() {
    let t = traj(
        "claude-code",
        vec![
            user("task"),
            reply("r1"),
            env("compact_summary", "S1"),
            reply("r2"),
        ],
        json!([{"step": 2}]),
    );
    let copies = segments(t.clone());
    let rows = Mode::Compaction.rows(t);
    assert_eq!(rows.len(), 2);
    assert!(!rows.is_branch());
    let mut kinds = Vec::new();
    let lent = rows.each(|row| {
        kinds.push(matches!(row, std::borrow::Cow::Borrowed(_)));
        serde_json::to_vec(&*row).unwrap()
    });
    // Every row but the last is lent; each is the whole segment, byte for byte.
    assert_eq!(kinds, [true, false]);
    let copied: Vec<Vec<u8>> = copies
        .iter()
        .map(|s| serde_json::to_vec(s).unwrap())
        .collect();
    assert_eq!(lent, copied);
    assert_eq!(count(&copies[0]), 1);
}

#[test]
fn count_says_how_many_segments_without_cutting() {
    let t = traj(
        "pi",
        vec![user("a"), reply("b"), reply("c"), reply("d")],
        json!([{"step": 2, "summary": "S"}, {"step": 3, "summary": "T"}]),
    );
    assert_eq!(count(&t), 3);
    assert_eq!(segments(t).len(), 3);
    let starts = traj(
        "droid",
        vec![user("a")],
        json!([{"step": 0, "summaryText": "S"}]),
    );
    assert_eq!(count(&starts), segments(starts).len());
}

#[test]
fn a_trajectory_without_compactions_passes_unchanged() {
    let t = traj("claude-code", vec![user("a"), reply("b")], json!([]));
    let bytes = serde_json::to_vec(&t).unwrap();
    let out = segments(t);
    assert_eq!(out.len(), 1);
    assert_eq!(serde_json::to_vec(&out[0]).unwrap(), bytes);
    let mut plain = Trajectory::new("p".into(), vec![user("a")], JsonObject::new());
    plain.schema_version = Some("1.5.0".into());
    assert_eq!(Mode::Compaction.apply(plain.clone()), vec![plain.clone()]);
    assert_eq!(Mode::None.apply(plain.clone()), vec![plain]);
}

#[test]
fn claude_code_segments_start_from_the_summary_step() {
    // Compactions at 2 (boundary and summary) and at 5 (summary at 5), one with nothing after it.
    let t = traj(
        "claude-code",
        vec![
            user("task"),
            reply("r1"),
            env("compact_summary", "S1"),
            user("go on"),
            reply("r2"),
            env("compact_summary", "S2"),
            reply("r3"),
        ],
        json!([
            {"step": 2, "line": 3, "summary_line": 4, "metadata": {"trigger": "auto"}},
            {"step": 5, "line": 8, "summary_line": 9, "metadata": null},
            {"step": null, "line": 12, "summary_line": null, "metadata": null}
        ]),
    );
    let out = segments(t);
    assert_eq!(out.len(), 3);
    assert_eq!(texts(&out[0]), ["-:task", "reply:r1"]);
    assert_eq!(
        texts(&out[1]),
        ["compact_summary:S1", "-:go on", "reply:r2"]
    );
    assert_eq!(texts(&out[2]), ["compact_summary:S2", "reply:r3"]);
    assert_eq!(out[1].id, "t#segment-1");
    assert_eq!(
        out[2].details["segment"],
        json!({"of": "t", "index": 2, "count": 3, "summary": "recorded", "steps": [5, 7]})
    );
    assert_eq!(out[0].details["segment"]["summary"], Value::Null);
}

#[test]
fn leading_system_steps_open_every_segment() {
    // Hermes: the system prompt, then turns, then a compaction whose summary is a step.
    let t = traj(
        "hermes",
        vec![
            env("system", "You are Hermes."),
            user("a"),
            reply("b"),
            env("compaction_summary", "S"),
            reply("c"),
        ],
        json!([{"step": 3, "message_id": 9, "summary": true}]),
    );
    let out = segments(t);
    assert_eq!(
        texts(&out[1]),
        ["system:You are Hermes.", "compaction_summary:S", "reply:c"]
    );
}

#[test]
fn a_compaction_without_a_summary_starts_with_the_marker() {
    // Hermes compacted without a summary row; Codex's remote compaction item is encrypted.
    for (format, entry) in [
        (
            "hermes",
            json!({"step": 2, "message_id": 3, "summary": false}),
        ),
        (
            "codex",
            json!({"step": 2, "line": 9, "item": {"type": "compaction", "encrypted_content": "x"}}),
        ),
    ] {
        let t = traj(
            format,
            vec![user("a"), reply("b"), user("c")],
            json!([entry]),
        );
        let out = segments(t);
        assert_eq!(
            texts(&out[1]),
            [format!("{MARKER_NAME}:{MARKER_TEXT}"), "-:c".into()]
        );
        assert_eq!(out[1].details["segment"]["summary"], "marker");
    }
}

#[test]
fn pi_segments_give_the_summary_then_the_kept_messages() {
    let t = traj(
        "pi",
        vec![
            user("a"),
            reply("b"),
            user("c"),
            reply("d"),
            user("e"),
            reply("f"),
        ],
        json!([{"step": 4, "summary": "S", "firstKeptEntryId": "x", "line": 7, "kept_from_step": 2}]),
    );
    let out = segments(t);
    assert_eq!(texts(&out[0]), ["-:a", "reply:b", "-:c", "reply:d"]);
    assert_eq!(
        texts(&out[1]),
        ["compaction_summary:S", "-:c", "reply:d", "-:e", "reply:f"]
    );
    assert_eq!(out[1].details["segment"]["kept"], json!([2, 4]));
}

#[test]
fn droid_summary_text_and_a_compressed_session_starting_with_it() {
    let entry = json!({"step": 2, "summaryText": "S", "anchorMessage": {"id": "m1", "index": 0}, "line": 4, "kept_from_step": 1});
    let t = traj(
        "droid",
        vec![user("a"), reply("b"), user("c")],
        json!([entry]),
    );
    let out = segments(t);
    assert_eq!(texts(&out[1]), ["compaction_summary:S", "reply:b", "-:c"]);
    // `/compress`: the compaction comes first; one segment, starting from the summary.
    let entry = json!({"step": 0, "summaryText": "S", "line": 2, "kept_from_step": 0});
    let t = traj("droid", vec![user("c"), reply("d")], json!([entry]));
    let out = segments(t);
    assert_eq!(out.len(), 1);
    assert_eq!(texts(&out[0]), ["compaction_summary:S", "-:c", "reply:d"]);
    assert_eq!(out[0].details["segment"]["count"], 1);
}

#[test]
fn codex_message_or_replacement_history() {
    let t = traj(
        "codex",
        vec![env("developer", "rules"), user("a"), reply("b"), user("c")],
        json!([{"line": 5, "timestamp": "t", "step": 3, "payload": {"message": "S"}}]),
    );
    assert_eq!(
        texts(&segments(t)[1]),
        ["developer:rules", "compaction_summary:S", "-:c"]
    );
    // The replacement history is what the model went on from: it is given as recorded.
    let history = json!([
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "rules"}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "a"}]},
        {"type": "reasoning", "summary": []},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "S"}]}
    ]);
    let t = traj(
        "codex",
        vec![env("developer", "rules"), user("a"), reply("b"), user("c")],
        json!([{"line": 5, "step": 3, "payload": {"message": "S", "replacement_history": history}}]),
    );
    let out = segments(t);
    assert_eq!(texts(&out[1]), ["developer:rules", "-:a", "-:S", "-:c"]);
    assert_eq!(out[1].details["segment"]["summary"], "recorded");
}

#[test]
fn copilot_starts_and_failed_compactions_do_not_cut() {
    let t = traj(
        "copilot-cli",
        vec![
            user("a"),
            reply("b"),
            env("compaction_summary", "S"),
            user("c"),
            reply("d"),
        ],
        json!([
            {"step": 2, "line": 5, "event": "start"},
            {"step": 2, "line": 6, "event": "complete", "summary_step": 2},
            {"step": 4, "line": 9, "event": "complete", "success": false}
        ]),
    );
    let out = segments(t);
    assert_eq!(out.len(), 2);
    assert_eq!(texts(&out[1]), ["compaction_summary:S", "-:c", "reply:d"]);
}

#[test]
fn links_cut_by_a_compaction_are_cleared_and_counted() {
    // Qwen Code: a call before the compaction, its result after the summary.
    let t = traj(
        "qwen-code",
        vec![
            user("a"),
            call("k1"),
            call("k2"),
            result("k2"),
            env("compaction_summary", "S"),
            result("k1"),
            call("k3"),
            result("k3"),
        ],
        json!([{"step": 4, "line": 6, "uuid": "u", "info": {}, "history_contents": 3}]),
    );
    let out = segments(t);
    assert_eq!(texts(&out[0]), ["-:a", "call:-", "call:k2", "f:out"]);
    assert_eq!(out[0].details["segment"]["unlinked"], 1);
    let Step::TextObservation(o) = &out[1].content[1] else {
        panic!("a result")
    };
    assert_eq!(o.tool_call_id, None);
    assert_eq!(out[1].content[3].tool_call_id(), Some("k3"));
    assert_eq!(out[1].details["segment"]["unlinked"], 1);
    assert!(crate::model::links::check_links(&out[1].content).is_empty());
}

#[test]
fn a_segment_is_not_cut_again() {
    let t = traj(
        "crush",
        vec![user("a"), env("compact_summary", "S"), reply("b")],
        json!([{"step": 1, "message_id": "m", "rowid": 3, "current": true}]),
    );
    let out = segments(t);
    assert_eq!(segments(out[1].clone()), vec![out[1].clone()]);
}

/// An ATIF continuation: the segment starts from the context the continuation file copies, in
/// its order (an earlier step a copy repeats, then the copies kept), then its own steps; the
/// steps marked not for training are given as the segment's indices.
#[test]
fn an_atif_continuation_starts_from_the_context_it_copies() {
    let content = vec![
        user("task"),
        reply("a"),
        env("terminal", "o1"),
        env("system", "handed off"),
        user("summary"),
        reply("questions"),
        user("answers"),
        reply("b"),
        env("terminal", "o2"),
    ];
    let mut t = traj(
        "atif",
        content,
        json!([{"step": 4, "file": "t.cont-1.json", "context_steps": [0, 4, 5, 6]}]),
    );
    t.details
        .get_mut("atif")
        .and_then(Value::as_object_mut)
        .unwrap() // ok: built above
        .insert("excluded_from_training".into(), json!([4, 5, 6]));
    let segs = segments(t);
    assert_eq!(segs.len(), 2);
    assert_eq!(
        texts(&segs[0]),
        ["-:task", "reply:a", "terminal:o1", "system:handed off"]
    );
    assert_eq!(
        texts(&segs[1]),
        [
            "-:task",
            "-:summary",
            "reply:questions",
            "-:answers",
            "reply:b",
            "terminal:o2"
        ]
    );
    let seg = &segs[1].details["segment"];
    assert_eq!(seg["summary"], "recorded");
    assert_eq!(seg["steps"], json!([4, 9]));
    assert_eq!(seg["excluded_from_training"], json!([1, 2, 3]));
    assert_eq!(
        segs[0].details["segment"]["excluded_from_training"],
        json!([])
    );
}
