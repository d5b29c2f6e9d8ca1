//! Rule files of the user's own (`redact --rules`, `export --rules`, `[redact] rules`): rules
//! added after the built-in ones, with keywords, entropy and a capture group; built-in rules
//! disabled; values and JSON paths allowed; every problem of a bad file located by line.

use std::path::Path;

use serde_json::{json, Value};

use crate::common::{json_lines, trajkit};

/// An invented key format, `acme_live_` and 32 characters, with the characters given.
fn acme(body: &str) -> String {
    format!("acme_live_{body}")
}

/// A fake GitHub token (the built-in rule's shape), from pieces.
fn github(fill: char) -> String {
    let body: String = (0..36)
        .map(|i| if i % 3 == 0 { fill } else { 'q' })
        .collect();
    ["gh", "p_", &body].concat()
}

const RANDOM32: &str = "Zq8rT2vLwK5mN9pX3bC7dF1gH4jS6tYe";

const RULES: &str = r#"# rules of our own
disable = ["email"]

[[rule]]
name = "acme_key"
regex = '''acme_live_([A-Za-z0-9]{32})'''
group = 1
keywords = ["ACME_LIVE_"]
entropy = 3.5
description = "ACME live API keys"

[[rule]]
name = "ticket_id"
kind = "pii"
regex = '''TCK-[0-9]{6}'''

[allow]
values = ["ALLOWED_TOKEN"]
paths = ["/details/notes"]
"#;

/// The rule file above, its allowed value a fake GitHub token.
fn rules_file(dir: &Path) -> String {
    let path = dir.join("rules.toml");
    let text = RULES.replace("ALLOWED_TOKEN", &github('A'));
    std::fs::write(&path, text).expect("write rules");
    path.to_string_lossy().into_owned()
}

fn trajectory() -> Value {
    let message = format!(
        "deploy with {} (not {}), ticket TCK-123456, mail jane.doe@corp-mail.net, tokens {} and {}",
        acme(RANDOM32),
        acme(&"a".repeat(32)),
        github('A'),
        github('B'),
    );
    json!({
        "schema_version": "1.5.0",
        "id": "t-rules",
        "content": [
            {"class_": "text_observation", "content": "ship it", "name": null, "source": "user"},
            {"class_": "message_action", "content": message, "description": null}
        ],
        "details": {"notes": {"kept": github('C')}, "other": github('D')}
    })
}

/// Runs `trajkit ARGS` on `stdin`: exit code, stdout, stderr.
fn run(args: &[&str], stdin: &str) -> (Option<i32>, String, String) {
    let out = trajkit()
        .args(args)
        .env_remove("TRAJKIT_REDACT_KEY")
        .write_stdin(stdin.to_owned())
        .output()
        .expect("runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_rule_file_adds_rules_disables_built_ins_and_allows_values_and_paths() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let rules = rules_file(tmp.path());
    let summary = tmp.path().join("summary.json");
    let summary_arg = summary.to_string_lossy().into_owned();
    let input = format!("{}\n", trajectory());
    let (code, out, err) = run(
        &["redact", "--rules", &rules, "--summary-json", &summary_arg],
        &input,
    );
    assert_eq!(code, Some(0), "{err}");
    let t = &json_lines(out.as_bytes())[0];
    let message = t["content"][1]["content"].as_str().expect("message");
    assert!(
        message.contains("deploy with acme_live_<SECRET:acme_key> "),
        "the group only: {message}"
    );
    assert!(!message.contains(RANDOM32), "{message}");
    assert!(
        message.contains(&acme(&"a".repeat(32))),
        "below the entropy threshold: {message}"
    );
    assert!(message.contains("ticket <PII:ticket_id>,"), "{message}");
    assert!(
        message.contains("jane.doe@corp-mail.net"),
        "email disabled: {message}"
    );
    assert!(message.contains(&github('A')), "allowed value: {message}");
    assert!(!message.contains(&github('B')), "{message}");
    assert_eq!(t["details"]["notes"]["kept"], github('C'), "allowed path");
    assert_eq!(t["details"]["other"], "<SECRET:github_token>");
    let s: Value =
        serde_json::from_slice(&std::fs::read(&summary).expect("summary")).expect("json");
    assert_eq!(
        s["rules"],
        json!([
            {"rule": "github_token", "kind": "secret", "count": 2},
            {"rule": "acme_key", "kind": "secret", "count": 1},
            {"rule": "ticket_id", "kind": "pii", "count": 1}
        ])
    );

    let (code, out, _) = run(
        &["redact", "--scan", "--rules", &rules, "--report", "json"],
        &input,
    );
    assert_eq!(code, Some(1));
    for rule in ["secret:acme_key", "pii:ticket_id", "secret:github_token"] {
        assert!(out.contains(rule), "{rule}: {out}");
    }
    assert!(
        !out.contains("pii:email") && !out.contains(RANDOM32),
        "{out}"
    );

    let (code, list, _) = run(&["redact", "--list-rules", "--rules", &rules], "");
    assert_eq!(code, Some(0));
    assert!(
        list.contains("acme_key") && list.contains("ACME live API keys"),
        "{list}"
    );
    assert!(
        list.contains("ticket_id") && !list.contains("email "),
        "{list}"
    );

    let (code, _, err) = run(
        &[
            "export", "-", "--to", "hf", "--redact", "--rules", &rules, "-o",
        ]
        .iter()
        .copied()
        .chain([tmp.path().join("hf").to_str().expect("utf-8")])
        .collect::<Vec<_>>(),
        &input,
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("acme_key 1"), "{err}");
}

#[test]
fn a_bad_rule_file_is_refused_with_every_problem_at_its_line() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let path = tmp.path().join("bad.toml");
    std::fs::write(
        &path,
        r#"disable = ["email", "no_such_rule"]

[[rule]]
name = "github_token"
regex = 'x+'

[[rule]]
name = "Bad Name"
regex = '(unclosed'

[[rule]]
name = "weak"
regex = 'w([0-9]+)'
group = 2
entropy = 9.5
keywords = [""]

[allow]
paths = ["details"]
"#,
    )
    .expect("write");
    let file = path.to_string_lossy().into_owned();
    let (code, _, err) = run(&["redact", "--rules", &file], "");
    assert_eq!(code, Some(2), "{err}");
    for (line, key) in [
        (1, "disable.1"),
        (4, "rule.0.name"),
        (8, "rule.1.name"),
        (9, "rule.1.regex"),
        (14, "rule.2.group"),
        (15, "rule.2.entropy"),
        (16, "rule.2.keywords.0"),
        (19, "allow.paths.0"),
    ] {
        assert!(
            err.contains(&format!("bad.toml:{line}: {key}: ")),
            "{key}: {err}"
        );
    }

    std::fs::write(&path, "[[rule]]\nname = \"x\"\nregexp = 'a'\n").expect("write");
    let (code, _, err) = run(&["redact", "--rules", &file], "");
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("bad.toml:3: rule.0.regexp: unknown field"),
        "{err}"
    );

    std::fs::write(&path, "[[rule]\n").expect("write");
    let (code, _, err) = run(&["redact", "--rules", &file], "");
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("bad.toml:1: "), "{err}");

    let missing = tmp.path().join("none.toml");
    let (code, _, err) = run(&["redact", "--rules", missing.to_str().expect("utf-8")], "");
    assert_eq!(code, Some(3), "{err}");
}

#[test]
fn a_pipeline_reads_its_rule_file_beside_it_and_checks_it() {
    let tmp = tempfile::tempdir().expect("temp dir");
    rules_file(tmp.path());
    std::fs::write(tmp.path().join("in.jsonl"), format!("{}\n", trajectory())).expect("write");
    let pipeline = tmp.path().join("p.toml");
    std::fs::write(
        &pipeline,
        "[[input]]\npath = \"in.jsonl\"\n\n[redact]\nrules = \"rules.toml\"\n\n[[export]]\nto = \"adp\"\noutput = \"out\"\n",
    )
    .expect("write");
    let p = pipeline.to_string_lossy().into_owned();
    let (code, _, err) = run(&["run", &p], "");
    assert_eq!(code, Some(0), "{err}");
    let data = std::fs::read_dir(tmp.path().join("out/data"))
        .expect("data")
        .map(|e| std::fs::read_to_string(e.expect("entry").path()).expect("read"))
        .collect::<String>();
    assert!(
        data.contains("<SECRET:acme_key>") && !data.contains(RANDOM32),
        "{data}"
    );
    let run_json: Value =
        serde_json::from_slice(&std::fs::read(tmp.path().join("out/run.json")).expect("run.json"))
            .expect("json");
    assert!(run_json.to_string().contains("\"acme_key\""), "{run_json}");

    std::fs::write(tmp.path().join("rules.toml"), "[[rule]]\nname = \"x\"\n").expect("write");
    let (code, _, err) = run(&["run", "--check", &p], "");
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("rules.toml:1: rule.0: missing field `regex`"),
        "{err}"
    );
}

#[test]
fn the_guide_s_example_rule_file_loads() {
    let guide =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/redaction.md"))
            .expect("docs/redaction.md");
    let start = guide.find("# redact-rules.toml\n").expect("the example");
    let example = &guide[start..start + guide[start..].find("```").expect("its end")];
    let tmp = tempfile::tempdir().expect("temp dir");
    let path = tmp.path().join("redact-rules.toml");
    std::fs::write(&path, example).expect("write");
    let (code, list, err) = run(
        &[
            "redact",
            "--list-rules",
            "--rules",
            path.to_str().expect("utf-8"),
        ],
        "",
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(
        list.contains("acme_key") && list.contains("ticket_id"),
        "{list}"
    );
    assert!(!list.contains("\nphone "), "disabled: {list}");
}

#[test]
fn a_resumed_run_refuses_a_rule_file_that_changed() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let rules = rules_file(tmp.path());
    let lines: String = (0..4)
        .map(|i| {
            let mut t = trajectory();
            t["id"] = json!(format!("t-{i}"));
            format!("{t}\n")
        })
        .collect();
    std::fs::write(tmp.path().join("in.jsonl"), lines).expect("write");
    let pipeline = tmp.path().join("p.toml");
    std::fs::write(
        &pipeline,
        "[[input]]\npath = \"in.jsonl\"\n\n[redact]\nrules = \"rules.toml\"\n\n[[export]]\nto = \"adp\"\noutput = \"out\"\nshard_rows = 1\n",
    )
    .expect("write");
    let killed = trajkit()
        .arg("run")
        .arg(&pipeline)
        .env("TRAJKIT_TEST_ABORT_AFTER_RECORDS", "3")
        .output()
        .expect("runs");
    assert!(!killed.status.success(), "not killed");
    let original = std::fs::read_to_string(&rules).expect("read");
    std::fs::write(&rules, original.replace("entropy = 3.5", "entropy = 3.0")).expect("write");
    let p = pipeline.to_string_lossy().into_owned();
    let (code, _, err) = run(&["run", &p, "--resume"], "");
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("cannot resume") && err.contains("changed"),
        "{err}"
    );
    std::fs::write(&rules, original).expect("write");
    let (code, _, err) = run(&["run", &p, "--resume"], "");
    assert_eq!(code, Some(0), "{err}");
}
