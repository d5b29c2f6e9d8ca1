//! Declarative converters: each shipped spec against ADP's own output for its corpus dataset,
//! and the spec language's error handling.

use std::path::Path;

use crate::common::{self, adp_corpus, convert, json_lines, trajkit, validate_adp};
use serde_json::Value;

/// A difference from ADP's `sample_std.json` that a spec makes on purpose; each is explained in
/// the spec's header comment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Documented {
    /// Environment output ADP labels `source: "user"` is labelled `environment`.
    EnvironmentSource,
    /// ADP appends this many randomly chosen, fabricated closing steps; the spec does not.
    NoRandomClosing(usize),
    /// A turn with several code blocks becomes the last block (the one that was run), not the
    /// first: code actions may differ in content and description.
    LastCodeBlock,
    /// The task that opens the trajectory, a `message_action` in ADP (as if the agent said it),
    /// is the user's `text_observation`.
    UserGoal,
    /// ADP's file repeats trajectories (its script prints everything converted so far after
    /// each input record): ours are compared, in order, with its last ones.
    RepeatedOutput,
    /// Ids ADP repeats are numbered after their first use (`0`, `0_2`, `0_3`).
    NumberedIds,
}

/// Shipped specs, the corpus dataset each reproduces, and its documented differences.
const SPECS: &[(&str, &[Documented])] = &[
    ("agenttuning_os", &[]),
    ("agenttuning_db", &[]),
    (
        "agenttuning_webshop",
        &[
            Documented::EnvironmentSource,
            Documented::NoRandomClosing(2),
        ],
    ),
    ("android_in_the_wild", &[Documented::UserGoal]),
    (
        "code_feedback",
        &[Documented::NoRandomClosing(2), Documented::LastCodeBlock],
    ),
    ("codeactinstruct", &[Documented::EnvironmentSource]),
    ("eto", &[Documented::EnvironmentSource]),
    ("llava_plus", &[]),
    ("mini-coder", &[Documented::NoRandomClosing(2)]),
    ("omniact", &[]),
    ("orca_agentinstruct", &[]),
    ("synatra", &[]),
    (
        "webarena_successful",
        &[Documented::RepeatedOutput, Documented::NumberedIds],
    ),
];

/// The step fields compared with ADP's output.
const FIELDS: &[&str] = &[
    "content",
    "description",
    "language",
    "function",
    "kwargs",
    "html",
    "axtree",
    "url",
    "annotations",
];

/// Steps compared: `(identical, documented, compared)`, where documented steps are excluded
/// from the agreement figure.
#[derive(Default)]
struct StepCount {
    identical: usize,
    documented: usize,
    compared: usize,
}

/// Compares one of our trajectories with ADP's; returns undocumented differences and the
/// number of documented ones, and counts the steps compared.
fn compare(
    ours: &Value,
    adp: &Value,
    documented: &[Documented],
    steps: &mut StepCount,
) -> (Vec<String>, usize) {
    let mut problems = Vec::new();
    let mut expected = 0;
    let ours_steps = ours["content"].as_array().expect("content");
    let mut adp_steps: &[Value] = adp["content"].as_array().expect("content");
    for d in documented {
        if let Documented::NoRandomClosing(n) = *d {
            if adp_steps.len() == ours_steps.len() + n {
                adp_steps = &adp_steps[..ours_steps.len()];
                expected += 1;
            }
        }
    }
    let classes = |steps: &[Value]| -> Vec<String> {
        steps
            .iter()
            .map(|s| s["class_"].as_str().unwrap_or("?").to_owned())
            .collect()
    };
    let mut ours_steps: &[Value] = ours_steps;
    if documented.contains(&Documented::UserGoal) {
        let (mine, theirs) = (&ours_steps[0], &adp_steps[0]);
        if mine["class_"] == "text_observation"
            && mine["source"] == "user"
            && theirs["class_"] == "message_action"
            && mine["content"] == theirs["content"]
        {
            (ours_steps, adp_steps) = (&ours_steps[1..], &adp_steps[1..]);
            expected += 1;
            steps.compared += 1;
            steps.documented += 1;
        }
    }
    if classes(ours_steps) != classes(adp_steps) {
        problems.push(format!(
            "step classes: ours {:?}, ADP {:?}",
            classes(ours_steps),
            classes(adp_steps)
        ));
        return (problems, expected);
    }
    for (i, (a, b)) in ours_steps.iter().zip(adp_steps).enumerate() {
        steps.compared += 1;
        let before = (problems.len(), expected);
        let code = a["class_"] == "code_action";
        for field in FIELDS {
            if a.get(*field) == b.get(*field) {
                continue;
            }
            if code
                && ["content", "description"].contains(field)
                && documented.contains(&Documented::LastCodeBlock)
            {
                expected += 1;
            } else {
                problems.push(format!(
                    "step {i} {field}: ours {}, ADP {}",
                    a.get(*field).unwrap_or(&Value::Null),
                    b.get(*field).unwrap_or(&Value::Null)
                ));
            }
        }
        match (a.get("source"), b.get("source")) {
            (x, y) if x == y => {}
            (Some(x), Some(y))
                if x == "environment"
                    && y == "user"
                    && documented.contains(&Documented::EnvironmentSource) =>
            {
                expected += 1
            }
            (x, y) => problems.push(format!("step {i} source: ours {x:?}, ADP {y:?}")),
        }
        match (problems.len(), expected) {
            same if same == before => steps.identical += 1,
            (p, _) if p == before.0 => steps.documented += 1,
            _ => {}
        }
    }
    let mut details = ours["details"].as_object().cloned().unwrap_or_default();
    details.remove("source");
    if Value::Object(details.clone()) != adp["details"] {
        problems.push(format!(
            "details: ours {}, ADP {}",
            Value::Object(details),
            adp["details"]
        ));
    }
    (problems, expected)
}

#[test]
fn shipped_specs_reproduce_adp_output() {
    let Some(corpus) = adp_corpus() else { return };
    let mut report = Vec::new();
    let mut failures = Vec::new();
    for (name, documented) in SPECS {
        let dir = corpus.join(name);
        let (code, ours, stderr) = convert(
            &[&dir.join("sample_raw.json")],
            Some(name),
            &["--adp-version", "1.2.0"],
        );
        assert_eq!(code, 0, "{name}: {stderr}");
        let adp: Vec<Value> = serde_json::from_slice(
            &std::fs::read(dir.join("sample_std.json")).expect("sample_std"),
        )
        .expect("sample_std is JSON");
        let in_order = documented.contains(&Documented::RepeatedOutput);
        let adp = match adp.len().checked_sub(ours.len()) {
            Some(extra) if in_order => adp[extra..].to_vec(),
            _ => adp,
        };
        let (mut identical, mut documented_only) = (0, 0);
        let mut steps = StepCount::default();
        for (k, expected) in adp.iter().enumerate() {
            let id = &expected["id"];
            let mine = if in_order {
                ours.get(k)
            } else {
                ours.iter().find(|t| &t["id"] == id)
            };
            let Some(mine) = mine else {
                failures.push(format!("{name} {id}: missing from our output"));
                continue;
            };
            let (mut problems, mut known) = compare(mine, expected, documented, &mut steps);
            let numbered = |mine: &Value| {
                let prefix = format!("{}_", id.as_str().unwrap_or_default());
                mine.as_str().is_some_and(|m| m.starts_with(&prefix))
            };
            match &mine["id"] {
                same if same == id => {}
                other if documented.contains(&Documented::NumberedIds) && numbered(other) => {
                    known += 1
                }
                other => problems.push(format!("id: ours {other}, ADP {id}")),
            }
            match (problems.is_empty(), known) {
                (true, 0) => identical += 1,
                (true, _) => documented_only += 1,
                (false, _) => failures.extend(problems.iter().map(|p| format!("{name} {id}: {p}"))),
            }
        }
        assert_eq!(
            ours.len(),
            adp.len(),
            "{name}: one trajectory per ADP trajectory"
        );
        // Steps that differ only as documented are left out of the figure.
        let figure = steps.identical as f64 / (steps.compared - steps.documented).max(1) as f64;
        report.push(format!(
            "{name:<22} {identical}/{} identical, {documented_only} differ only as documented \
             {documented:?}; steps: {}/{} identical ({:.1} %), {} documented",
            adp.len(),
            steps.identical,
            steps.compared - steps.documented,
            100.0 * figure,
            steps.documented,
        ));
        assert!(
            figure >= 0.95 || !failures.is_empty(),
            "{name}: {:.1} % of steps agree",
            100.0 * figure
        );
    }
    eprintln!(
        "agreement with ADP's sample_std.json:\n  {}",
        report.join("\n  ")
    );
    assert!(
        failures.is_empty(),
        "undocumented differences:\n{}",
        failures.join("\n")
    );
}

#[test]
fn shipped_specs_write_valid_adp_1_5() {
    let Some(corpus) = adp_corpus() else { return };
    for (name, _) in SPECS {
        let raw = corpus.join(name).join("sample_raw.json");
        let (code, ours, stderr) = convert(&[&raw], Some(name), &[]);
        assert_eq!(code, 0, "{name}: {stderr}");
        assert!(!ours.is_empty());
        assert_eq!(validate_adp(&ours), 0, "{name}: output validates");
        assert!(ours
            .iter()
            .all(|t| t["details"]["source"]["format"] == *name));
    }
}

#[test]
fn every_shipped_spec_is_tested_and_passes_its_schema() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("converters");
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .expect("converters/")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    for file in &files {
        let stem = file.trim_end_matches(".toml");
        assert!(
            SPECS.iter().any(|(n, _)| *n == stem),
            "{file} has no agreement test"
        );
        let path = dir.join(file);
        trajkit()
            .args(["validate", "--schema", "converter-spec"])
            .arg(&path)
            .assert()
            .success();
        let text = std::fs::read_to_string(&path).expect("spec");
        let lines = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .count();
        // Most specs are 18-45 lines; synatra (one rule per browser action) is the longest.
        assert!(
            lines <= 85,
            "{file} has {lines} lines besides comments; keep specs short"
        );
    }
    let listed = trajkit().arg("formats").output().expect("runs");
    let listed = String::from_utf8_lossy(&listed.stdout).into_owned();
    for (name, _) in SPECS {
        assert!(listed.contains(name), "`trajkit formats` lists {name}");
    }
}

/// Writes `spec` to a temporary file and converts `records` (JSON lines) with it.
fn convert_with_spec(spec: &str, records: &str) -> (i32, Vec<Value>, String, String) {
    let (code, out, stderr, rejects, _) = convert_with_spec_at(spec, records);
    (code, out, stderr, rejects)
}

const TINY: &str = r#"
name = "tiny"
description = "test spec"
strict = true

[record]
id = "{/id}"
turns = "/turns"
role = "/who"
text = "/say"

[roles]
human = "user"
bot = "assistant"
system = "drop"

[[rule]]
role = "bot"
match = '^run: (?P<code>.*)$'
emit = [{ class = "code_action", language = "bash", content = "{code}" }]

[[rule]]
role = "bot"
match = '^(?P<fn>search|open)\((?P<args>.*)\)$'
emit = [{ class = "api_action", function = "{fn}", args = "{args}", args_syntax = "python:query" }]

[[rule]]
role = "human"
match = '^out: (?P<out>.*)'
emit = [{ class = "text_observation", source = "environment", content = "{out}" }]

[[rule]]
role = "human"
emit = [{ class = "text_observation", content = "{$text|trim}" }]

[[rule]]
role = "bot"
match = '^answer: (?P<a>.*)'
emit = [{ class = "message_action", content = "{a}" }]

[finish]
wrap = "<finish> {content} </finish>"

[details]
split = "{/meta/split}"
"#;

#[test]
fn a_spec_turns_text_into_steps() {
    let record = r#"{"id": "t1", "meta": {"split": "dev"}, "turns": [
        {"who": "system", "say": "be brief"},
        {"who": "human", "say": "  count files  "},
        {"who": "bot", "say": "run: ls | wc -l"},
        {"who": "human", "say": "out: 3"},
        {"who": "bot", "say": "search(\"files\", limit=2)"},
        {"who": "human", "say": "out: a b c"},
        {"who": "bot", "say": "answer: 3"}]}"#;
    let (code, out, stderr, _) = convert_with_spec(TINY, &record.replace('\n', " "));
    assert_eq!(code, 0, "{stderr}");
    let t = &out[0];
    assert_eq!(t["id"], "t1");
    assert_eq!(t["details"]["split"], "dev");
    let steps = t["content"].as_array().unwrap();
    assert_eq!(
        common::step_classes(t),
        [
            "text_observation",
            "code_action",
            "text_observation",
            "api_action",
            "text_observation",
            "message_action"
        ]
    );
    assert_eq!(
        steps[0]["content"], "count files",
        "trim filter; system turn dropped"
    );
    assert_eq!(steps[1]["content"], "ls | wc -l");
    assert_eq!(steps[2]["source"], "environment");
    assert_eq!(steps[2]["content"], "3");
    assert_eq!(steps[3]["function"], "search");
    assert_eq!(
        steps[3]["kwargs"],
        serde_json::json!({"query": "files", "limit": 2})
    );
    assert_eq!(steps[5]["content"], "<finish> 3 </finish>");
    // ADP 1.5: the tool actions are linked to the observations that answer them.
    assert_eq!(steps[1]["tool_call_id"], steps[2]["tool_call_id"]);
    assert!(steps[1]["tool_call_id"].is_string());
}

#[test]
fn strict_specs_reject_unmatched_turns_and_unknown_roles_with_the_pointer() {
    let records = [
        r#"{"id": "a", "turns": [{"who": "human", "say": "hi"}, {"who": "bot", "say": "???"}]}"#,
        r#"{"id": "b", "turns": [{"who": "robot", "say": "hi"}]}"#,
        r#"{"id": "c", "turns": {"who": "human"}}"#,
        r#"{"id": "d", "turns": [{"who": "human", "say": "ok"}, {"who": "bot", "say": "answer: ok"}]}"#,
    ];
    let (code, out, stderr, rejects) = convert_with_spec(TINY, &records.join("\n"));
    assert_eq!(code, 1, "rejections exit 1");
    assert_eq!(out.len(), 1, "the good record is still written");
    assert_eq!(out[0]["id"], "d");
    let rejects = json_lines(rejects.as_bytes());
    assert_eq!(rejects.len(), 3, "every bad record is in the rejects file");
    let all = serde_json::to_string(&rejects).unwrap();
    for needle in [
        "/turns/1/say",
        "no rule matches turn 1",
        "role \\\"robot\\\" is not declared",
        "expected the list of turns",
    ] {
        assert!(all.contains(needle), "{needle} in {all}");
    }
    assert!(stderr.contains("in.jsonl:1"), "{stderr}");
}

#[test]
fn a_bad_spec_is_refused_before_any_data_is_read_naming_line_and_key() {
    let bad = TINY.replace("'^run: (?P<code>.*)$'", "'^run: (?P<code>.*$'");
    let regex_line = bad.lines().position(|l| l.contains("^run:")).unwrap() + 1;
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("bad.toml");
    std::fs::write(&spec, &bad).unwrap();
    let out = trajkit()
        .arg("convert")
        .arg("--spec")
        .arg(&spec)
        .arg(dir.path().join("does-not-exist.jsonl"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "a bad spec is a usage error");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("bad.toml:{regex_line}: rule.0.match")),
        "{stderr}"
    );
    assert!(
        !stderr.contains("does-not-exist"),
        "no data was read: {stderr}"
    );

    for (broken, needle) in [
        (
            TINY.replace("{code}", "{cod}"),
            "no pattern in scope has a group named \"cod\"",
        ),
        (TINY.replace("strict = true", "strict = \"yes\""), "/strict"),
        (
            TINY.replace("class = \"code_action\"", "class = \"code\""),
            "/rule/0/emit/0/class",
        ),
        (TINY.replace("[finish]", "[finnish]"), "finnish"),
        (
            TINY.replace("id = \"{/id}\"", "id = \"{/id\""),
            "/record/id: unclosed placeholder",
        ),
        ("name = [".to_owned(), "bad.toml:1:"),
    ] {
        std::fs::write(&spec, &broken).unwrap();
        let out = trajkit()
            .args(["validate", "--schema", "converter-spec"])
            .arg(&spec)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{needle}");
        let report = String::from_utf8_lossy(&out.stdout);
        assert!(report.contains(needle), "{needle} in {report}");
    }
}

#[test]
fn the_readme_walkthrough_spec_does_what_the_readme_says() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/spec-example");
    let (code, out, stderr) = convert(
        &[&dir.join("tickets.jsonl")],
        None,
        &["--spec", dir.join("ticketbot.toml").to_str().unwrap()],
    );
    assert_eq!(code, 0, "{stderr}");
    let expected: Vec<Value> = json_lines(&std::fs::read(dir.join("expected.jsonl")).unwrap());
    let strip = |t: &Value| {
        let mut t = t.clone();
        t["details"].as_object_mut().unwrap().remove("source");
        t
    };
    assert_eq!(
        out.iter().map(strip).collect::<Vec<_>>(),
        expected,
        "README example output (details.source aside)"
    );
}

#[test]
fn each_last_required_extracts_and_vars() {
    let spec = r#"
name = "multi"
description = "test spec"

[record]
id = "{/id}"
turns = "/t"

[[record.extract]]
from = "{/header}"
required = true
last = true
match = 'v(?P<version>\d+)'

[vars]
tag = '{version|prepend("release-")}'

[roles]
user = "user"
assistant = "assistant"

[[rule]]
role = "assistant"
match = '(?m)^\$ (?P<cmd>.+)$'
each = true
emit = [{ class = "code_action", language = "bash", content = "{cmd}", description = "{tag}" }]

[[rule]]
role = "user"
last = true
match = '(?m)^note: (?P<note>.+)$'
emit = [{ class = "text_observation", content = "{note}" }]

[details]
tag = "{tag}"
"#;
    let records = [
        r#"{"id": "a", "header": "v1 then v22", "t": [{"role": "user", "content": "note: old\nnote: new"}, {"role": "assistant", "content": "$ ls\n$ pwd"}]}"#,
        r#"{"id": "b", "header": "no version", "t": []}"#,
    ];
    let (code, out, _, rejects) = convert_with_spec(spec, &records.join("\n"));
    assert_eq!(code, 1, "record b lacks the required extract");
    assert!(rejects.contains("does not match the spec's record.extract[0] (required)"));
    let t = &out[0];
    assert_eq!(
        t["details"]["tag"], "release-22",
        "last match of the extract, through a var"
    );
    let steps = t["content"].as_array().unwrap();
    assert_eq!(steps[0]["content"], "new", "last = true on a rule");
    assert_eq!(steps.len(), 3, "each = true: one code action per command");
    assert_eq!(steps[1]["content"], "ls");
    assert_eq!(steps[2]["content"], "pwd");
    assert_eq!(steps[2]["description"], "release-22");
}

#[test]
fn a_leading_turn_folds_into_the_next_by_pointer() {
    let spec = r#"
name = "fold"
description = "test spec"
[record]
id = "{/id}"
turns = "/conversations"
[roles]
system = "user"
user = "user"
[[rule]]
turn = 0
emit = []
[[rule]]
turn = 1
emit = [{ class = "text_observation", content = "{/conversations/0/content}\n\n{$text}" }]
"#;
    let record = r#"{"id": "f", "conversations": [{"role": "system", "content": "Be terse."}, {"role": "user", "content": "Hi"}]}"#;
    let (code, out, stderr, _) = convert_with_spec(spec, record);
    assert_eq!(code, 0, "{stderr}");
    let steps = out[0]["content"].as_array().unwrap();
    assert_eq!(steps.len(), 1);
    assert_eq!(steps[0]["content"], "Be terse.\n\nHi");
}

const STEPS: &str = r#"
name = "steps"
description = "test spec: a record per step, grouped by episode"
strict = true
[record]
id = "ep-{/ep}"
group = "{/ep}"
turn = [{ role = "goal", text = "/goal" }, { role = "act", text = "/act" }]
[roles]
goal = "user"
act = "assistant"
[[rule]]
role = "goal"
member = 0
emit = [{ class = "text_observation", content = "{$text}" }]
[[rule]]
role = "goal"
emit = []
[[rule]]
role = "act"
match = '^tap$'
emit = [{ class = "api_action", function = "tap", kwargs = { x = "{/xy/0}", y = "{/xy/1}", note = "{/note}" }, optional = ["note"] },
        { class = "text_observation", source = "environment", content = "tapped" }]
[details]
first_step = "{/step}"
"#;

#[test]
fn consecutive_records_of_a_group_make_one_trajectory() {
    let records = [
        r#"{"ep": 7, "step": 0, "goal": "open it", "act": "tap", "xy": [0.5, 0.25]}"#,
        r#"{"ep": 7, "step": 1, "goal": "open it", "act": "tap", "xy": [1, 2], "note": "again"}"#,
        r#"{"ep": 8, "step": 0, "goal": "close it", "act": "tap", "xy": [3, 4], "note": ""}"#,
    ];
    let (code, out, stderr, _) = convert_with_spec(STEPS, &records.join("\n"));
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(out.len(), 2, "one trajectory per group");
    let (a, b) = (&out[0], &out[1]);
    assert_eq!(
        (a["id"].as_str(), b["id"].as_str()),
        (Some("ep-7"), Some("ep-8"))
    );
    assert_eq!(
        a["details"]["first_step"], 0,
        "details come from the first record"
    );
    assert_eq!(
        common::step_classes(a),
        [
            "text_observation",
            "api_action",
            "text_observation",
            "api_action",
            "text_observation"
        ],
        "the goal once (member 0), then each record's steps in order"
    );
    let steps = a["content"].as_array().unwrap();
    assert_eq!(
        steps[1]["kwargs"],
        serde_json::json!({"x": 0.5, "y": 0.25}),
        "a lone field copies its JSON value; an optional kwarg that is missing is left out"
    );
    assert_eq!(
        steps[3]["kwargs"],
        serde_json::json!({"x": 1, "y": 2, "note": "again"})
    );
    assert_eq!(
        b["content"][1]["kwargs"],
        serde_json::json!({"x": 3, "y": 4}),
        "an optional kwarg that renders empty is left out"
    );
    assert!(
        stderr.contains("2 records in, 2 written"),
        "a group is one record: {stderr}"
    );
}

#[test]
fn a_group_key_that_comes_back_is_rejected_with_line_and_pointer_or_kept_apart() {
    let records = [
        r#"{"ep": 1, "goal": "g", "act": "tap", "xy": [0, 0]}"#,
        r#"{"ep": 2, "goal": "g", "act": "tap", "xy": [0, 0]}"#,
        r#"{"ep": 1, "goal": "g", "act": "tap", "xy": [0, 0]}"#,
        r#"{"ep": 1, "goal": "g", "act": "swipe", "xy": [0, 0]}"#,
        r#"{"goal": "no key", "act": "tap", "xy": [0, 0]}"#,
        r#"{"ep": 3, "goal": "g", "act": "tap", "xy": [0, 0]"#,
        r#"{"ep": 4, "goal": "g", "act": "tap", "xy": [0, 0]}"#,
    ];
    let (code, out, stderr, rejects) = convert_with_spec(STEPS, &records.join("\n"));
    assert_eq!(code, 1, "{stderr}");
    let ids: Vec<&str> = out.iter().filter_map(|t| t["id"].as_str()).collect();
    assert_eq!(ids, ["ep-1", "ep-2", "ep-4"]);
    let rejects = json_lines(rejects.as_bytes());
    let all = serde_json::to_string(&rejects).unwrap();
    assert_eq!(rejects.len(), 3, "{all}");
    for needle in [
        "group key \\\"1\\\" comes back after records of another key",
        "\"pointer\":\"/ep\"",
        "the group key renders empty",
    ] {
        assert!(all.contains(needle), "{needle} in {all}");
    }
    assert!(
        stderr.contains("in.jsonl:3"),
        "the reappearing run's first line: {stderr}"
    );
    assert!(
        stderr.contains("in.jsonl:6"),
        "the broken record's own line: {stderr}"
    );
    assert!(
        stderr.contains("6 records in, 3 written") && stderr.contains("3 rejected"),
        "groups are counted as records, and every one is accounted for: {stderr}"
    );

    // With regroup = "separate", the run that comes back is a trajectory of its own, and a
    // problem in a later member names that member's line.
    let separate = STEPS.replace(
        "group = \"{/ep}\"",
        "group = \"{/ep}\"\nregroup = \"separate\"",
    );
    let (code, out, stderr, _) = convert_with_spec(&separate, &records[..4].join("\n"));
    assert_eq!(code, 1);
    assert_eq!(
        out.len(),
        2,
        "ep-1, ep-2; the second ep-1 run has a bad action"
    );
    assert!(
        stderr.contains("in.jsonl:4"),
        "the failing member's line: {stderr}"
    );
    assert!(stderr.contains("/act"), "{stderr}");
}

#[test]
fn a_record_splits_into_one_trajectory_per_episode() {
    let spec = r#"
name = "episodes"
description = "test spec: episodes in a record"
[record]
id = "{$parent/session}_{$index}"
split = "/episodes"
turns = "/turns"
[roles]
user = "user"
assistant = "assistant"
[details]
session = "{$parent/session}"
"#;
    let records = [
        r#"{"session": "s1", "episodes": [{"turns": [{"role": "user", "content": "a"}]}, {"turns": [{"role": "assistant", "content": "b"}]}]}"#,
        r#"{"session": "s2", "episodes": [{"turns": [{"role": "robot", "content": "c"}]}]}"#,
        r#"{"session": "s3", "episodes": []}"#,
    ];
    let (code, out, stderr, rejects) = convert_with_spec(spec, &records.join("\n"));
    assert_eq!(code, 1, "{stderr}");
    let ids: Vec<&str> = out.iter().filter_map(|t| t["id"].as_str()).collect();
    assert_eq!(ids, ["s1_0", "s1_1"]);
    assert_eq!(out[1]["details"]["session"], "s1");
    assert_eq!(out[1]["content"][0]["content"], "b");
    assert!(rejects.contains("/episodes/0/turns/0/content"), "{rejects}");
    assert!(rejects.contains("the list to split is empty"), "{rejects}");
}

#[test]
fn for_each_makes_steps_and_values_from_items_entries_and_zipped_lists() {
    let spec = r#"
name = "iterate"
description = "test spec: iteration"
[record]
id = "{/id}"
turn = [{ role = "obs", text = "/shot" }]
[roles]
obs = "environment"
[[rule]]
role = "obs"
emit = [
  { class = "image_observation", source = "environment", content = "{$text}", annotations = { for_each = { label = "/labels", box = "/boxes" }, skip_empty = true, text = "{$value/label}", element_type = "n{$index}", bounding_box = { x = "{$value/box/0}", y = "{$value/box/1}", width = '{$value/box/2|subtract("$value/box/0")}', height = '{$value/box/3|subtract("$value/box/1")}' } } },
  { class = "text_observation", source = "environment", for_each = "/logs", skip_empty = true, content = "{$index}: {$value}" },
  { class = "api_action", for_each = "/env", function = "set", kwargs = { name = "{$key}", value = "{$value}" } },
]
"#;
    let record = r#"{"id": "i", "shot": "s.png", "labels": ["ok", null, "go"], "boxes": [[1, 1, 4, 2], null, [0.5, 0, 1.0, 1]], "logs": ["first", "", "third"], "env": {"A": 1, "B": "x"}}"#;
    let (code, out, stderr, _) = convert_with_spec(spec, record);
    assert_eq!(code, 0, "{stderr}");
    let steps = out[0]["content"].as_array().unwrap();
    assert_eq!(
        steps[0]["annotations"],
        serde_json::json!([
            {"text": "ok", "element_type": "n0", "bounding_box": {"x": 1, "y": 1, "width": 3, "height": 1}},
            {"text": "go", "element_type": "n2", "bounding_box": {"x": 0.5, "y": 0, "width": 0.5, "height": 1}}
        ]),
        "zipped by position; the empty item skipped; arithmetic on items"
    );
    let texts: Vec<&str> = steps[1..3]
        .iter()
        .filter_map(|s| s["content"].as_str())
        .collect();
    assert_eq!(texts, ["0: first", "2: third"], "skip_empty on a list");
    assert_eq!(
        steps[3]["kwargs"],
        serde_json::json!({"name": "A", "value": 1})
    );
    assert_eq!(
        steps[4]["kwargs"],
        serde_json::json!({"name": "B", "value": "x"})
    );

    let unequal = record.replace("null, \"go\"]", "null]");
    let (code, _, _, rejects) = convert_with_spec(spec, &unequal);
    assert_eq!(code, 1);
    assert!(rejects.contains("zips lists of one length"), "{rejects}");
}

#[test]
fn new_constructs_are_checked_when_the_spec_loads() {
    for (broken, needle) in [
        (
            STEPS.replace("content = \"{$text}\"", "content = \"{$value}\""),
            "$value and $key exist only inside a for_each",
        ),
        (
            STEPS.replace("id = \"ep-{/ep}\"", "id = \"{$parent/ep}\""),
            "$parent exists only with [record] split",
        ),
        (
            STEPS.replace("group = \"{/ep}\"", "group = \"{$record}\""),
            "a group key reads only fields",
        ),
        (
            STEPS.replace("group = \"{/ep}\"", "group = \"{/ep}\"\nsplit = \"/x\""),
            "`split` and `group` exclude each other",
        ),
        (
            STEPS.replace("optional = [\"note\"]", "optional = [\"nope\"]"),
            "\"nope\" is not an argument",
        ),
        (
            STEPS.replace("[details]", "[details]\nsum = '{/a|add(\"1 2\")}'"),
            "a number or a variable",
        ),
        (
            STEPS.replace(
                "group = \"{/ep}\"",
                "group = \"{/ep}\"\nregroup = \"merge\"",
            ),
            "/record/regroup",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let spec = dir.path().join("bad.toml");
        std::fs::write(&spec, &broken).unwrap();
        let out = trajkit()
            .args(["validate", "--schema", "converter-spec"])
            .arg(&spec)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{needle}");
        let report = String::from_utf8_lossy(&out.stdout);
        assert!(report.contains(needle), "{needle} in {report}");
    }
}

/// The first JSON and TOML code blocks after `heading` in docs/specs.md.
fn docs_example(heading: &str) -> (String, String) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/specs.md");
    let text = std::fs::read_to_string(path).expect("docs/specs.md");
    let section = &text[text.find(heading).expect("heading")..];
    let block = |fence: &str| {
        let start = section.find(fence).expect("block") + fence.len();
        section[start..][..section[start..].find("```").expect("fence end")].to_owned()
    };
    (block("```json\n"), block("```toml\n"))
}

#[test]
fn the_docs_grouping_and_splitting_examples_do_what_the_docs_say() {
    let (records, spec) = docs_example("### Grouping");
    let (code, out, stderr, _) = convert_with_spec(&spec, &records);
    assert_eq!(code, 0, "{stderr}");
    let ids: Vec<&str> = out.iter().filter_map(|t| t["id"].as_str()).collect();
    assert_eq!(ids, ["e1", "e2"]);
    assert_eq!(
        common::step_classes(&out[0]),
        ["text_observation", "api_action", "message_action"]
    );
    assert_eq!(
        out[0]["content"][1]["kwargs"],
        serde_json::json!({"x": 0.5, "y": 0.9})
    );

    let (record, spec) = docs_example("### Splitting");
    let record: Value = serde_json::from_str(&record).expect("the docs' record is JSON");
    let (code, out, stderr, _) = convert_with_spec(&spec, &record.to_string());
    assert_eq!(code, 0, "{stderr}");
    let ids: Vec<&str> = out.iter().filter_map(|t| t["id"].as_str()).collect();
    assert_eq!(ids, ["s9_0", "s9_1"]);
    assert_eq!(out[1]["details"]["user"], "ann");
    assert_eq!(out[1]["content"][1]["content"], "see you");
}

/// Image annotations whose coordinates are missing (a position list cut short) are not ADP:
/// the record is rejected with the reason, never written (found by the `spec` fuzz target).
#[test]
fn annotations_without_numeric_coordinates_are_rejected() {
    let Some(corpus) = crate::common::adp_corpus() else {
        return;
    };
    let raw = corpus.join("android_in_the_wild/sample_raw.json");
    let mut records: Vec<serde_json::Value> =
        serde_json::from_slice(&std::fs::read(raw).expect("read")).expect("JSON");
    records[0]["image/ui_annotations_positions"][0] = serde_json::json!([0.5]);
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("aitw.jsonl");
    let text: String = records.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(&path, text).expect("write");
    let (code, out, stderr) = crate::common::convert(&[&path], Some("android_in_the_wild"), &[]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("annotation 0 of an image_observation: bounding_box.x is null"),
        "{stderr}"
    );
    assert_eq!(crate::common::validate_adp(&out), 0);
}

#[test]
fn the_docs_turn_fields_example_does_what_the_docs_say() {
    let (record, spec) = docs_example("### Turns that are objects");
    let record: Value = serde_json::from_str(&record).expect("the docs' record is JSON");
    let (code, out, stderr, _) = convert_with_spec(&spec, &record.to_string());
    assert_eq!(code, 0, "{stderr}");
    let steps = out[0]["content"].as_array().unwrap();
    assert_eq!(steps[0]["class_"], "web_observation");
    assert_eq!(steps[0]["url"], "http://shop/");
    assert_eq!(steps[1]["function"], "click");
    assert_eq!(steps[1]["kwargs"], serde_json::json!({"element": "1"}));
    assert_eq!(steps[1]["description"], "The cart has it.");
}

const PAGES: &str = r#"
name = "pages"
description = "test spec: turns that are objects, lookup tables"
strict = true
[record]
id = "{/id}"
turns = "/steps"
role = '{$turn/act/name|default("page")}'
text = "/why"
[roles]
page = "environment"
type = "assistant"
scroll = "assistant"
call = "assistant"
[tables]
keys = { 15 = " ", 48 = "A", 82 = "c", 99 = "t", 982 = "\n" }
dy = { down = 100, up = -100 }
names = ["zero", "one"]
[[rule]]
role = "page"
emit = [{ class = "web_observation", html = "{$turn/tree}", url = "{$turn/url}", image = "{$turn/shot}", viewport_size = [1280, 720] }]
[[rule]]
role = "type"
emit = [{ class = "api_action", function = "type", kwargs = { text = '{$turn/act/text|lookup("keys")|join("")}', n = '{$turn/act/n|lookup("names")}' }, optional = ["n"], description = "{$text}" }]
[[rule]]
role = "scroll"
emit = [{ class = "api_action", function = "scroll", kwargs = { dy = '{$turn/act/dir|lower|lookup("dy")}' } }]
[[rule]]
role = "call"
emit = [{ class = "api_action", for_each = "$turn/act/calls", function = "{$value/fn}", kwargs = "{$value/args}" }]
"#;

#[test]
fn turn_fields_role_templates_lookup_tables_and_whole_kwargs() {
    let record = r#"{"id": "p", "steps": [
        {"url": "http://a/", "tree": "[1] button", "shot": "s/0.png"},
        {"why": "type it", "act": {"name": "type", "text": [48, 82, 99, 0, 982], "n": 1}},
        {"act": {"name": "scroll", "dir": "Down"}},
        {"act": {"name": "call", "calls": [{"fn": "f", "args": {"q": [1, 2]}}, {"fn": "g", "args": {}}]}}]}"#;
    let (code, out, stderr, _) = convert_with_spec(PAGES, &record.replace('\n', " "));
    assert_eq!(code, 0, "{stderr}");
    let steps = out[0]["content"].as_array().unwrap();
    assert_eq!(
        steps[0]["image_observation"],
        serde_json::json!({"class_": "image_observation", "content": "s/0.png", "annotations": [], "source": "environment"}),
        "a page's screenshot"
    );
    assert_eq!(steps[0]["viewport_size"], serde_json::json!([1280, 720]));
    assert_eq!(
        steps[1]["kwargs"],
        serde_json::json!({"text": "Act\n", "n": "one"}),
        "key ids decoded item by item, the unknown one left out; a list table by position"
    );
    assert_eq!(steps[1]["description"], "type it");
    assert_eq!(
        steps[2]["kwargs"],
        serde_json::json!({"dy": 100}),
        "a table's value keeps its type"
    );
    assert_eq!(steps[3]["kwargs"], serde_json::json!({"q": [1, 2]}));
    assert_eq!(
        (steps[4]["function"].as_str(), &steps[4]["kwargs"]),
        (Some("g"), &serde_json::json!({}))
    );

    let bad = [
        r#"{"id": "q", "steps": [{"act": {"name": "call", "calls": [{"fn": "f", "args": [1]}]}}]}"#,
        r#"{"id": "r", "steps": [{"act": {"name": ""}}]}"#,
    ];
    let (code, out, _, rejects) = convert_with_spec(PAGES, &bad.join("\n"));
    assert_eq!((code, out.len()), (1, 0));
    assert!(
        rejects.contains("the kwargs template gives [1], not an object"),
        "{rejects}"
    );
    assert!(
        rejects.contains("the spec's role template renders empty for this turn")
            && rejects.contains("\"pointer\":\"/steps/0\""),
        "{rejects}"
    );
}

#[test]
fn turn_fields_and_tables_are_checked_when_the_spec_loads() {
    for (broken, needle) in [
        (
            PAGES.replace("lookup(\"dy\")", "lookup(\"dx\")"),
            "lookup names the table \"dx\", which [tables] does not define",
        ),
        (
            PAGES.replace("id = \"{/id}\"", "id = \"{$turn/id}\""),
            "$turn/... exists only in the templates of rules and [record] role",
        ),
        (
            PAGES.replace("names = [\"zero\", \"one\"]", "names = \"zero\""),
            "/tables/names",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let spec = dir.path().join("bad.toml");
        std::fs::write(&spec, &broken).unwrap();
        let out = trajkit()
            .args(["validate", "--schema", "converter-spec"])
            .arg(&spec)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{needle}");
        let report = String::from_utf8_lossy(&out.stdout);
        assert!(report.contains(needle), "{needle} in {report}");
    }
}

/// Writes `spec` to `my.toml` in a temporary directory and converts `records` with it,
/// returning the exit code, the output, stderr, the rejects and the spec's path.
fn convert_with_spec_at(spec: &str, records: &str) -> (i32, Vec<Value>, String, String, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let spec_path = dir.path().join("my.toml");
    let input = dir.path().join("in.jsonl");
    let rejects = dir.path().join("rejects.jsonl");
    std::fs::write(&spec_path, spec).expect("write spec");
    std::fs::write(&input, records).expect("write input");
    let out = trajkit()
        .arg("convert")
        .arg("--spec")
        .arg(&spec_path)
        .arg(&input)
        .arg("--rejects")
        .arg(&rejects)
        .output()
        .expect("runs");
    (
        out.status.code().expect("exit code"),
        json_lines(&out.stdout),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        std::fs::read_to_string(&rejects).unwrap_or_default(),
        spec_path.display().to_string(),
    )
}

const NOTES: &str = r#"
name = "notes"
description = "test spec: mistakes trajkit reports"
[record]
id = "{/id}"
turns = "/t"
[roles]
user = "user"
assistant = "assistant"
[[rule]]
role = "assistant"
emit = [{ class = "message_action", content = "{$text}{/nonexistent}", description = "{/why}" }]
"#;

#[test]
fn a_pointer_that_never_resolves_is_reported_with_its_line_and_count() {
    let records = [
        r#"{"id": "a", "t": [{"role": "assistant", "content": "x"}], "why": null}"#,
        r#"{"id": "b", "t": [{"role": "assistant", "content": "y"}, {"role": "assistant", "content": "z"}]}"#,
    ];
    let (code, out, stderr, _, spec) = convert_with_spec_at(NOTES, &records.join("\n"));
    assert_eq!((code, out.len()), (0, 2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "trajkit: warning: {spec}:12: rule.0.emit.0.content: {{/nonexistent}} never \
             resolved (missing in 3 of 3 uses; `|required` rejects the records that lack it)\n"
        )),
        "{stderr}"
    );
    assert!(
        !stderr.contains("{/why}"),
        "a pointer found once (null included) is data, not a typo: {stderr}"
    );
    assert!(
        stderr.contains(
            "2 records in, 2 written (2 trajectories, ADP 1.5.0), 0 rejected, 1 warning;"
        ),
        "{stderr}"
    );
}

#[test]
fn a_required_value_that_is_missing_rejects_its_record() {
    let spec = NOTES.replace("{/nonexistent}", "{/tag|required}");
    let records = [
        r#"{"id": "a", "tag": "!", "t": [{"role": "assistant", "content": "x"}]}"#,
        r#"{"id": "b", "t": [{"role": "assistant", "content": "y"}]}"#,
    ];
    let (code, out, stderr, rejects, _) = convert_with_spec_at(&spec, &records.join("\n"));
    assert_eq!((code, out.len()), (1, 1), "{stderr}");
    assert_eq!(out[0]["content"][0]["content"], "x!");
    assert!(
        stderr
            .contains("in.jsonl:2: error[spec-convert] /tag: rule 0: {/tag|required} has no value"),
        "{stderr}"
    );
    assert!(rejects.contains("\"pointer\":\"/tag\""), "{rejects}");
}

#[test]
fn duplicate_ids_are_rejected_or_numbered_or_kept_as_the_spec_says() {
    let records = [
        r#"{"id": "a", "t": [{"role": "user", "content": "1"}]}"#,
        r#"{"id": "b", "t": [{"role": "user", "content": "2"}]}"#,
        r#"{"id": "a", "t": [{"role": "user", "content": "3"}]}"#,
        r#"{"id": "a_2", "t": [{"role": "user", "content": "4"}]}"#,
    ]
    .join("\n");
    let ids = |out: &[Value]| -> Vec<String> {
        out.iter()
            .filter_map(|t| t["id"].as_str().map(str::to_owned))
            .collect()
    };
    let (code, out, stderr, rejects, _) = convert_with_spec_at(NOTES, &records);
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(ids(&out), ["a", "b", "a_2"]);
    assert!(
        stderr.contains("in.jsonl:3: error[duplicate-id] id=\"a\" /id: trajectory id \"a\" was already written, from ")
            && stderr.contains(
                "in.jsonl:1 (ids must be unique; the spec's `[record] duplicate_ids = \"suffix\"` \
             numbers repeated ones, \"keep\" writes them as they are)"
            ),
        "{stderr}"
    );
    assert_eq!(json_lines(rejects.as_bytes()).len(), 1);
    assert!(stderr.contains("4 records in, 3 written"), "{stderr}");

    let suffix = NOTES.replace(
        "turns = \"/t\"",
        "turns = \"/t\"\nduplicate_ids = \"suffix\"",
    );
    let (code, out, stderr, _, _) = convert_with_spec_at(&suffix, &records);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        ids(&out),
        ["a", "b", "a_2", "a_2_2"],
        "the first number not yet used; a later id that was given out is numbered in turn"
    );
    assert_eq!(out[2]["content"][0]["content"], "3");

    let keep = NOTES.replace("turns = \"/t\"", "turns = \"/t\"\nduplicate_ids = \"keep\"");
    let (code, out, _, _, _) = convert_with_spec_at(&keep, &records);
    assert_eq!(code, 0);
    assert_eq!(ids(&out), ["a", "b", "a", "a_2"]);
}

#[test]
fn strict_specs_take_role_defaults_for_roles_without_rules_and_say_what_to_add() {
    let spec = NOTES
        .replace("name = \"notes\"", "name = \"notes\"\nstrict = true")
        .replace(
            "role = \"assistant\"\nemit",
            "name = \"answer\"\nrole = \"assistant\"\nmatch = '^answer: '\nemit",
        );
    let records = [
        r#"{"id": "a", "t": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "answer: 1"}]}"#,
        r#"{"id": "b", "t": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "???"}]}"#,
    ];
    let (code, out, stderr, _, _) = convert_with_spec_at(&spec, &records.join("\n"));
    assert_eq!((code, out.len()), (1, 1), "{stderr}");
    assert_eq!(
        out[0]["content"][0]["class_"], "text_observation",
        "the user role has no rule: its [roles] default, strict or not"
    );
    assert!(
        stderr.contains(
            "in.jsonl:2: error[spec-convert] /t/1/content: no rule matches turn 1 (role \"assistant\") and the spec \
             is strict: every turn of a role with rules must match one of them ([\"answer\"]); \
             add a rule for role \"assistant\" without `match` to convert the others, or leave \
             `strict` out: \"???\""
        ),
        "{stderr}"
    );
}

#[test]
fn spec_errors_name_the_key_for_details_collisions_and_toml_escapes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.toml");
    let check = |text: &str| {
        std::fs::write(&path, text).unwrap();
        let out = trajkit()
            .args(["validate", "--schema", "converter-spec"])
            .arg(&path)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let report = check(&format!("{NOTES}[details]\nsource = \"{{/src}}\"\n"));
    assert!(
        report.contains(
            "/details/source: \"source\" is a details key trajkit writes itself (details.source: \
             the input and the format), which would replace yours: name it differently"
        ),
        "{report}"
    );
    assert!(report.contains(":14:"), "the key's line: {report}");
    let report = check(&NOTES.replace("emit = [", "match = \"\\d+\"\nemit = ["));
    assert!(
        report.contains(":12: error[converter-spec] /rule/0/match: TOML: ")
            && report.contains(
                "(in a basic string \"...\" a backslash starts an escape; write a regex or a \
                 template with filter arguments as a literal string, which keeps backslashes as \
                 written: match = '\\d+'; see docs/spec-escaping.md)"
            ),
        "{report}"
    );
}

/// The examples of docs/spec-escaping.md, as written there.
#[test]
fn the_escaping_page_examples_do_what_the_page_says() {
    let spec = r#"
name = "escapes"
description = "test spec: docs/spec-escaping.md"
[record]
id = "n{/a~0b}"
turns = "/t"
[roles]
user = "user"
assistant = "assistant"
[[rule]]
role = "user"
turn = 0
emit = [
    { class = "text_observation", content = '{$text|sub("\\s+", " ")}' },
    { class = "text_observation", content = "{$text|sub(\"\\\\s+\", \" \")}" },
    { class = "text_observation", content = '{$text|sub("\"", "")}' },
    { class = "text_observation", content = '{/image~1encoded}' },
]
[[rule]]
role = "user"
emit = [{ class = "text_observation", content = '{/date|sub("^(\\d{4})-(\\d{2})", "$2/$1")} {$text|replace("}", ")")}' }]
[[rule]]
role = "assistant"
match = '^(?P<fn>\w+) (?P<args>\{.*\})$'
emit = [{ class = "message_action", content = '{{"tool": "{fn}", "args": {args}}}' }]
"#;
    let record = r#"{"a~b": 1, "image/encoded": "aGk=", "date": "2026-11", "t": [
        {"role": "user", "content": "Total:   42  \"EUR\""},
        {"role": "user", "content": "x}"},
        {"role": "assistant", "content": "search {\"q\": 1}"}]}"#;
    let (code, out, stderr, _) = convert_with_spec(spec, &record.replace('\n', " "));
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(out[0]["id"], "n1", "~0 is a ~");
    let texts: Vec<&str> = out[0]["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["content"].as_str())
        .collect();
    assert_eq!(
        texts,
        [
            "Total: 42 \"EUR\"",
            "Total: 42 \"EUR\"",
            "Total:   42  EUR",
            "aGk=",
            "11/2026 x)",
            "{\"tool\": \"search\", \"args\": {\"q\": 1}}"
        ]
    );
}

/// A spec of `tests/fixtures/specs/` converting its records (`NAME.toml`, `NAME.jsonl`; the same
/// files seed the `spec` fuzz target).
fn convert_fixture(name: &str) -> (i32, Vec<Value>, String, String) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/specs");
    let read = |ext: &str| std::fs::read_to_string(dir.join(format!("{name}.{ext}"))).expect(name);
    convert_with_spec(&read("toml"), &read("jsonl"))
}

#[test]
fn a_fixed_turn_that_is_not_text_is_its_compact_json_and_a_missing_one_rejects() {
    let (code, out, stderr, rejects) = convert_fixture("answers");
    assert_eq!(code, 1, "q3 lacks its answer: {stderr}");
    let ids: Vec<&str> = out.iter().filter_map(|t| t["id"].as_str()).collect();
    assert_eq!(ids, ["q1", "q2"]);
    let answer = &out[0]["content"][1];
    assert_eq!(answer["content"], "42", "the rule's regex reads the JSON");
    assert_eq!(
        answer["description"],
        r#"{"work":["6 x 7","= 42"],"final":"42"}"#
    );
    assert_eq!(
        out[1]["content"][1]["content"], "[1,2]",
        "no rule matches: the role's default, with the JSON as text"
    );
    assert!(
        rejects.contains("/answer") && rejects.contains("missing"),
        "{rejects}"
    );
}

#[test]
fn for_each_emits_several_steps_per_item_and_chooses_items_by_key_or_value() {
    let (code, out, stderr, _) = convert_fixture("pairs");
    assert_eq!(code, 0, "{stderr}");
    let t = &out[0];
    assert_eq!(
        common::step_classes(t),
        [
            "text_observation",
            "api_action",
            "text_observation",
            "api_action",
            "text_observation",
            "api_action",
            "api_action",
            "message_action"
        ]
    );
    let steps = t["content"].as_array().unwrap();
    assert_eq!(steps[1]["function"], "ls");
    assert_eq!(
        steps[1]["description"],
        Value::Null,
        "blank text: nonempty gives null"
    );
    assert_eq!(steps[2]["content"], "a.txt");
    assert_eq!(steps[2]["tool_call_id"], steps[1]["tool_call_id"]);
    assert_eq!(steps[3]["function"], "cat", "`think` skipped by value");
    assert_eq!(steps[4]["content"], "hello");
    assert_eq!(
        steps[5]["kwargs"],
        serde_json::json!({"name": "HOME", "value": "/root"})
    );
    assert_eq!(steps[6]["kwargs"]["name"], "LANG", "PATH left out by key");
    assert_eq!(steps[7]["content"], "It says hello.", "`when` passed it on");
    assert_eq!(
        common::step_classes(&out[1]),
        ["text_observation", "message_action"],
        "an empty list of calls: `when` does not hold"
    );
}

#[test]
fn a_rule_rejects_a_record_with_its_own_reason() {
    let (code, out, stderr, rejects) = convert_fixture("reject");
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(out.len(), 1);
    assert_eq!(out[0]["content"][1]["function"], "click");
    assert!(
        rejects.contains("/actions/1")
            && rejects
                .contains("unsupported: rejected by the spec: function drag is not supported"),
        "{rejects}"
    );
}

#[test]
fn filter_arguments_read_the_record() {
    let (code, out, stderr, _) = convert_fixture("fill");
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        out[0]["content"][0]["content"],
        "Click the Cart link on shop.example."
    );
}

#[test]
fn schema_errors_name_the_key_and_say_what_it_must_be() {
    let base = "name = \"x\"\ndescription = \"d\"\n[roles]\na = \"user\"\n";
    for (spec, needles) in [
        (
            "[record]\nid = \"{/id}\"\nturns = \"/t\"\nrole = \"speaker\"\n",
            &["record.role: must be a JSON pointer inside the turn", "found \"speaker\""][..],
        ),
        (
            "[record]\nid = \"{/id}\"\nturns = \"/t\"\n[[rule]]\nemit = [{ class = \"api_action\", function = \"f\", for_each = \"/x\", emit = [] }]\n",
            &["rule.0.emit.0: unknown key `emit`", "steps = ["][..],
        ),
        (
            "[record]\nid = \"{/id}\"\nturns = \"/t\"\n[[rule]]\nemit = [{ class = \"api_action\", for_each = \"/x\", steps = [{ class = \"text_observation\", content = \"c\" }] }]\n",
            &["rule.0.emit.0: unknown key `class`", "not both"][..],
        ),
        (
            "[record]\nid = \"{/id}\"\nturns = \"/t\"\n[[rule]]\nemit = [{ content = \"c\" }]\n",
            &["rule.0.emit.0: a step needs `class`"][..],
        ),
        (
            "[record]\nid = \"{/id}\"\nturns = \"/t\"\n[[rule]]\nemit = [{ class = \"text_observation\", content = \"c\", for_each = \"logs\" }]\n",
            &["rule.0.emit.0.for_each: must be a data pointer"][..],
        ),
        (
            "[record]\nid = \"{/id}\"\nturns = \"/t\"\n[[rule]]\nrole = \"a\"\n",
            &["rule.0: a rule needs `emit`"][..],
        ),
        (
            "[record]\nid = \"{/id}\"\nturns = \"/t\"\n[[rule]]\nemit = [{ class = \"text_observation\", content = \"c\", keep_if = \"{$value}\" }]\n",
            &["keep_if: `keep_if` chooses items of a `for_each`"][..],
        ),
        (
            "[record]\nid = \"{/id}\"\nturns = \"/t\"\n[vars]\n\"a-b\" = \"x\"\n",
            &["vars: \"a-b\" is not a name of letters, digits and _"][..],
        ),
        (
            "[record]\nid = \"{/id}\"\nturns = \"/t\"\n[[rule]]\nemit = [[{ class = \"message_action\", content = \"c\" }]]\n",
            &["rule.0.emit.0: must be a step, a table"][..],
        ),
        (
            "[record]\nid = \"{/id}\"\nturns = \"/t\"\nsplit = 5\n",
            &["record.split: must be a JSON pointer: empty, or starting with /"][..],
        ),
    ] {
        let spec = format!("{base}{spec}");
        let (code, _, stderr, _) = convert_with_spec(&spec, "{}\n");
        assert_eq!(code, 2, "{spec}");
        for needle in needles {
            assert!(stderr.contains(needle), "{needle:?} in {stderr}");
        }
        assert!(!stderr.contains("anyOf") && !stderr.contains("oneOf"), "{stderr}");
    }
}

#[test]
fn the_docs_examples_of_steps_reject_filter_arguments_and_fixed_turns_do_what_they_say() {
    let one_line = |json: &str| {
        let v: Value = serde_json::from_str(json).expect("the docs' record is JSON");
        format!("{v}\n")
    };
    let (record, spec) = docs_example("### Several steps per item");
    let (code, out, stderr, _) = convert_with_spec(&spec, &one_line(&record));
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        common::step_classes(&out[0]),
        [
            "text_observation",
            "api_action",
            "text_observation",
            "message_action"
        ]
    );
    let steps = out[0]["content"].as_array().unwrap();
    assert_eq!(steps[1]["function"], "cat");
    assert_eq!(steps[1]["kwargs"], serde_json::json!({"path": "a.txt"}));
    assert_eq!(steps[1]["description"], Value::Null);
    assert_eq!(steps[2]["content"], "hello");
    assert_eq!(steps[2]["source"], "environment");

    let (record, spec) = docs_example("### Rules that reject a record");
    let (code, out, _, rejects) = convert_with_spec(&spec, &one_line(&record));
    assert_eq!((code, out.len()), (1, 0));
    assert!(
        rejects.contains("unsupported: rejected by the spec: function drag is not supported"),
        "{rejects}"
    );

    let (record, spec) = docs_example("### Filter arguments from the record");
    let (code, out, stderr, _) = convert_with_spec(&spec, &one_line(&record));
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        out[0]["content"][0]["content"],
        "Click the Cart link on shop.example."
    );

    let (record, spec) = docs_example("### Fixed turns");
    let (code, out, stderr, _) = convert_with_spec(&spec, &one_line(&record));
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(out[0]["content"][1]["content"], "42");
    assert_eq!(
        out[0]["content"][1]["description"],
        r#"{"work":["6 x 7","= 42"],"final":"42"}"#
    );
}
