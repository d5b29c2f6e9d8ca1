//! `trajkit validate` from the command line: exit codes, one diagnostic per problem at the right
//! pointer, reporters, rejects.

use crate::common::{self, json_lines, trajkit, valid_v15};
use serde_json::{json, Value};

/// Validates one record given on stdin and returns (exit code, JSON diagnostics).
fn validate(record: &Value) -> (i32, Vec<Value>) {
    let out = trajkit()
        .args(["validate", "-q", "--report", "json", "-"])
        .write_stdin(format!("{record}\n"))
        .output()
        .expect("runs");
    (
        out.status.code().expect("exit code"),
        json_lines(&out.stdout),
    )
}

/// Asserts exactly one diagnostic with `rule` at `pointer`, and exit code 1.
fn assert_single(record: &Value, rule: &str, pointer: &str) {
    let (code, diags) = validate(record);
    assert_eq!(code, 1, "invalid record must exit 1: {diags:?}");
    assert_eq!(
        diags.len(),
        1,
        "exactly one diagnostic expected, got {diags:?}"
    );
    assert_eq!(diags[0]["rule"], rule, "{diags:?}");
    assert_eq!(diags[0]["pointer"], pointer, "{diags:?}");
    assert_eq!(diags[0]["line"], 1);
    assert_eq!(diags[0]["file"], "-");
    assert_eq!(diags[0]["severity"], "error");
}

#[test]
fn the_unmutated_record_is_valid() {
    let (code, diags) = validate(&valid_v15());
    assert_eq!((code, diags.len()), (0, 0), "{diags:?}");
}

#[test]
fn unknown_class_is_one_diagnostic_at_class() {
    let mut r = valid_v15();
    r["content"][3]["class_"] = json!("magic_action");
    assert_single(&r, "schema-enum", "/content/3/class_");
}

#[test]
fn missing_id_is_one_diagnostic_at_id() {
    let mut r = valid_v15();
    r.as_object_mut().expect("object").remove("id");
    assert_single(&r, "schema-required", "/id");
}

#[test]
fn wrong_source_is_one_diagnostic_at_source() {
    let mut r = valid_v15();
    r["content"][0]["source"] = json!("assistant");
    assert_single(&r, "schema-enum", "/content/0/source");
}

#[test]
fn unknown_language_is_one_diagnostic_at_language() {
    let mut r = valid_v15();
    r["content"][1]["language"] = json!("klingon");
    r["available_code_languages"] = json!(["klingon"]);
    assert_single(&r, "code-language", "/content/1/language");
}

#[test]
fn duplicate_tool_call_id_is_one_diagnostic() {
    let mut r = valid_v15();
    r["content"][3]["tool_call_id"] = json!("c1");
    r["content"][4]["tool_call_id"] = json!("c1");
    assert_single(&r, "link-duplicate", "/content/3/tool_call_id");
}

#[test]
fn dangling_tool_call_id_is_one_diagnostic() {
    let mut r = valid_v15();
    r["content"][4]["tool_call_id"] = json!("nope");
    assert_single(&r, "link-dangling", "/content/4/tool_call_id");
    let (_, diags) = validate(&r);
    assert!(diags[0]["message"]
        .as_str()
        .is_some_and(|m| m.contains("\"nope\"") && m.contains("\"c2\"")));
}

#[test]
fn unknown_key_is_pointed_at() {
    let mut r = valid_v15();
    r["content"][2]["colour"] = json!("red");
    assert_single(&r, "schema-additionalProperties", "/content/2/colour");
}

#[test]
fn unsupported_version_is_one_diagnostic() {
    let mut r = valid_v15();
    r["schema_version"] = json!("2.0.0");
    assert_single(&r, "schema-version", "/schema_version");
}

#[test]
fn fields_from_a_newer_version_are_rejected_in_an_older_one() {
    let mut r = valid_v15();
    r["schema_version"] = json!("1.2.0");
    r.as_object_mut()
        .expect("object")
        .remove("available_code_languages");
    let (code, diags) = validate(&r);
    assert_eq!(code, 1);
    assert!(diags
        .iter()
        .all(|d| d["rule"] == "schema-additionalProperties"
            && d["pointer"]
                .as_str()
                .is_some_and(|p| p.ends_with("/tool_call_id"))));
    assert_eq!(diags.len(), 4);
}

#[test]
fn missing_link_in_1_5_is_reported_but_fine_unversioned() {
    let mut r = valid_v15();
    for i in [1, 2] {
        r["content"][i]
            .as_object_mut()
            .expect("object")
            .remove("tool_call_id");
    }
    assert_single(&r, "link-missing", "/content/1");
    let unversioned = json!({
        "id": "u1",
        "content": [
            {"class_": "code_action", "language": "bash", "content": "ls", "description": null},
            {"class_": "text_observation", "content": "a", "source": "user"}
        ],
        "details": {"k": "v"}
    });
    assert_eq!(validate(&unversioned).0, 0);
}

#[test]
fn details_must_be_strings_before_1_1() {
    let r = json!({"id": "u1", "content": [], "details": {"n": 3}});
    assert_single(&r, "schema-type", "/details/n");
}

#[test]
fn available_code_languages_must_match_what_is_used() {
    let mut r = valid_v15();
    r["available_code_languages"] = json!(["bash", "python"]);
    assert_single(&r, "available-code-languages", "/available_code_languages");
}

#[test]
fn rejects_file_holds_invalid_records_with_reasons_and_the_summary_counts() {
    let dir = tempfile::tempdir().expect("temp dir");
    let input = dir.path().join("in.jsonl");
    let rejects = dir.path().join("rejects.jsonl");
    let mut bad = valid_v15();
    bad["id"] = json!("bad-one");
    bad["content"][0]["source"] = json!("robot");
    let text = format!("{}\n{bad}\n{}\n", valid_v15(), valid_v15());
    std::fs::write(&input, text).expect("write");
    let out = trajkit()
        .args(["validate", "--rejects"])
        .arg(&rejects)
        .arg(&input)
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("3 records, 2 valid, 1 invalid"), "{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(":2: error[schema-enum] id=\"bad-one\" /content/0/source"),
        "{stdout}"
    );
    let lines = json_lines(&std::fs::read(&rejects).expect("rejects written"));
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["line"], 2);
    assert_eq!(lines[0]["record_id"], "bad-one");
    assert_eq!(lines[0]["stage"], "validate");
    assert_eq!(lines[0]["record"], bad);
    assert_eq!(lines[0]["diagnostics"][0]["rule"], "schema-enum");
}

#[test]
fn max_errors_stops_early_with_exit_1() {
    let mut bad = valid_v15();
    bad["content"][0]["source"] = json!("robot");
    let input: String = (0..50).map(|_| format!("{bad}\n")).collect();
    let out = trajkit()
        .args(["validate", "--report", "json", "--max-errors", "3", "-"])
        .write_stdin(input)
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(json_lines(&out.stdout).len(), 3);
    assert!(String::from_utf8_lossy(&out.stderr).contains("stopped early"));
}

#[test]
fn junit_github_and_sarif_reports_go_to_the_report_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut bad = valid_v15();
    bad["content"][0]["source"] = json!("robot");
    for (format, needle) in [
        ("junit", "<failure message="),
        ("github", "::error file=-,line=2,title=schema-enum::"),
        ("sarif", "\"ruleId\": \"schema-enum\""),
    ] {
        let report = dir.path().join(format!("report.{format}"));
        let out = trajkit()
            .args(["validate", "-q", "--report", format, "--report-file"])
            .arg(&report)
            .arg("-")
            .write_stdin(format!("{}\n{bad}\n", valid_v15()))
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(1), "{format}");
        assert!(out.stdout.is_empty(), "{format} report must go to the file");
        let text = std::fs::read_to_string(&report).expect("report written");
        assert!(text.contains(needle), "{format}: {text}");
    }
}

#[test]
fn sample_data_is_valid() {
    trajkit()
        .args(["validate", "-q"])
        .arg(common::sample_data().join("adp"))
        .assert()
        .code(0);
}
