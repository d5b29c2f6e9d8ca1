//! Bad input never panics or hangs: each case gets a clear diagnostic naming file, line and
//! rule, a non-zero exit code, and the rest of the input is still processed.

use std::fs;
use std::path::Path;

use crate::common::{json_lines, trajkit, valid_v15};

/// Runs `validate --report json` on `path`, returning (exit code, diagnostics, stderr).
fn validate_file(path: &Path, extra: &[&str]) -> (i32, Vec<serde_json::Value>, String) {
    let out = trajkit()
        .args(["validate", "--report", "json"])
        .args(extra)
        .arg(path)
        .output()
        .expect("runs");
    let code = out.status.code().expect("exited normally, not by a signal");
    assert_ne!(
        code,
        101,
        "panicked: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        code,
        json_lines(&out.stdout),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> std::path::PathBuf {
    let p = dir.join(name);
    fs::write(&p, bytes).expect("write fixture");
    p
}

#[test]
fn truncated_json_line_is_reported_and_the_next_line_still_read() {
    let dir = tempfile::tempdir().expect("dir");
    let good = valid_v15().to_string();
    let text = format!("{good}\n{{\"id\": \"t\", \"content\": [\n{good}\n");
    let p = write(dir.path(), "t.jsonl", text.as_bytes());
    let (code, diags, stderr) = validate_file(&p, &[]);
    assert_eq!(code, 1);
    assert_eq!(diags.len(), 1, "{diags:?}");
    assert_eq!(diags[0]["rule"], "json-truncated");
    assert_eq!(diags[0]["line"], 2);
    assert!(stderr.contains("3 records, 2 valid, 1 invalid"), "{stderr}");
}

#[test]
fn truncated_json_array_is_reported() {
    let dir = tempfile::tempdir().expect("dir");
    let good = valid_v15().to_string();
    let text = format!("[\n{good},\n{{\"id\": \"cut");
    let p = write(dir.path(), "t.json", text.as_bytes());
    let (code, diags, _) = validate_file(&p, &[]);
    assert_eq!(code, 1);
    assert_eq!(diags.len(), 1, "{diags:?}");
    assert_eq!(diags[0]["rule"], "json-truncated");
    assert_eq!(diags[0]["line"], 3);
}

#[test]
fn invalid_utf8_is_an_encoding_error_at_its_line() {
    let dir = tempfile::tempdir().expect("dir");
    let mut bytes = format!("{}\n", valid_v15()).into_bytes();
    bytes.extend_from_slice(b"{\"id\": \"caf\xe9\", \"content\": []}\n");
    let p = write(dir.path(), "latin1.jsonl", &bytes);
    let rejects = dir.path().join("rejects.jsonl");
    let rejects_arg = rejects.to_string_lossy().into_owned();
    let (code, diags, _) = validate_file(&p, &["--rejects", &rejects_arg]);
    assert_eq!(code, 1);
    assert_eq!(diags.len(), 1);
    assert_eq!(diags[0]["rule"], "json-encoding");
    assert_eq!(diags[0]["line"], 2);
    let lines = json_lines(&fs::read(&rejects).expect("rejects"));
    let hex = lines[0]["raw_hex"]
        .as_str()
        .expect("non-UTF-8 bytes kept as hex");
    assert!(hex.contains("e9"));
}

#[test]
fn a_50_mb_line_is_processed_and_a_limit_rejects_it_cleanly() {
    let dir = tempfile::tempdir().expect("dir");
    let mut big = valid_v15();
    big["content"][0]["content"] = serde_json::Value::String("x".repeat(50 << 20));
    let text = format!("{big}\n{}\n", valid_v15());
    let p = write(dir.path(), "big.jsonl", text.as_bytes());
    let (code, diags, _) = validate_file(&p, &[]);
    assert_eq!((code, diags.len()), (0, 0), "{diags:?}");
    let (code, diags, stderr) = validate_file(&p, &["--max-record-bytes", "1000000"]);
    assert_eq!(code, 1);
    assert_eq!(diags.len(), 1);
    assert_eq!(diags[0]["rule"], "record-too-large");
    assert!(stderr.contains("2 records, 1 valid, 1 invalid"), "{stderr}");
}

#[test]
fn nesting_100000_deep_is_a_depth_error_not_a_crash() {
    let dir = tempfile::tempdir().expect("dir");
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let in_kwargs = format!(
        "{{\"id\":\"d\",\"content\":[{{\"class_\":\"api_action\",\"function\":\"f\",\"kwargs\":{{\"a\":{deep}}}}}]}}"
    );
    let text = format!("{deep}\n{in_kwargs}\n{}\n", valid_v15());
    let p = write(dir.path(), "deep.jsonl", text.as_bytes());
    let (code, diags, stderr) = validate_file(&p, &[]);
    assert_eq!(code, 1);
    let rules: Vec<&str> = diags.iter().filter_map(|d| d["rule"].as_str()).collect();
    assert_eq!(rules, vec!["json-depth", "json-depth"]);
    assert!(stderr.contains("3 records, 1 valid, 2 invalid"), "{stderr}");
}

#[test]
fn wrong_types_are_schema_errors_at_their_pointer() {
    let dir = tempfile::tempdir().expect("dir");
    let text = "{\"id\": 5, \"content\": []}\n{\"id\": \"x\", \"content\": \"steps\"}\n[1, 2]\n";
    let p = write(dir.path(), "types.jsonl", text.as_bytes());
    let (code, diags, _) = validate_file(&p, &[]);
    assert_eq!(code, 1);
    let got: Vec<(&str, &str, u64)> = diags
        .iter()
        .map(|d| {
            (
                d["rule"].as_str().unwrap_or(""),
                d["pointer"].as_str().unwrap_or(""),
                d["line"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("schema-type", "/id", 1),
            ("schema-type", "/content", 2),
            ("not-an-object", "", 3)
        ]
    );
}

#[test]
fn empty_file_has_no_records_and_says_so() {
    let dir = tempfile::tempdir().expect("dir");
    let p = write(dir.path(), "empty.jsonl", b"");
    let (code, diags, stderr) = validate_file(&p, &[]);
    assert_eq!((code, diags.len()), (0, 0));
    assert!(stderr.contains("empty.jsonl holds no records"), "{stderr}");
    assert!(stderr.contains("0 records"), "{stderr}");
}

#[test]
fn missing_file_is_an_io_error_naming_it() {
    let out = trajkit()
        .args(["validate", "/nonexistent/dir/data.jsonl"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(3));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cannot read /nonexistent/dir/data.jsonl"),
        "{stderr}"
    );
}

#[test]
fn corrupt_gzip_is_reported_as_a_read_error() {
    let dir = tempfile::tempdir().expect("dir");
    let p = write(
        dir.path(),
        "bad.jsonl.gz",
        b"\x1f\x8b\x08\x00garbage-not-deflate",
    );
    let (code, diags, _) = validate_file(&p, &[]);
    assert_eq!(code, 1);
    assert_eq!(diags.len(), 1);
    assert_eq!(diags[0]["rule"], "read-error");
}

#[test]
fn usage_errors_exit_2() {
    trajkit()
        .args(["validate", "--report", "xml"])
        .assert()
        .code(2);
    trajkit().args(["frobnicate"]).assert().code(2);
    let out = trajkit()
        .args(["convert", "--from", "autogpt", "x"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown format \"autogpt\""));
}
