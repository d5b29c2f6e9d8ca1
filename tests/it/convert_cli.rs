//! `trajkit convert --from adp` and `trajkit stats` from the command line.

use std::io::Write;

use crate::common::{json_lines, sample_data, trajkit, valid_v15};
use serde_json::{json, Value};

#[test]
fn gzip_and_zstd_inputs_convert_like_plain_ones() {
    let dir = tempfile::tempdir().expect("dir");
    let plain = sample_data().join("adp/unversioned.json");
    let bytes = std::fs::read(&plain).expect("sample");
    let gz = dir.path().join("s.json.gz");
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(&bytes).expect("gzip");
    std::fs::write(&gz, enc.finish().expect("gzip")).expect("write");
    let zst = dir.path().join("s.json.zst");
    std::fs::write(&zst, zstd::encode_all(&bytes[..], 3).expect("zstd")).expect("write");
    let run = |p: &std::path::Path| {
        trajkit()
            .args(["convert", "-q"])
            .arg(p)
            .output()
            .expect("runs")
            .stdout
    };
    let expected = run(&plain);
    assert_eq!(json_lines(&expected).len(), 2);
    assert_eq!(run(&gz), expected);
    assert_eq!(run(&zst), expected);
}

#[test]
fn output_file_is_written_whole_and_rejects_hold_what_does_not_fit() {
    let dir = tempfile::tempdir().expect("dir");
    let out = dir.path().join("nested/out.jsonl");
    let rejects = dir.path().join("rejects.jsonl");
    let linked = valid_v15();
    let plain = json!({"schema_version": "1.5.0", "id": "plain", "content": [
        {"class_": "text_observation", "content": "hi", "name": null, "source": "user"},
        {"class_": "message_action", "content": "hello", "description": null}
    ], "details": {"k": "v"}});
    let result = trajkit()
        .args([
            "convert",
            "--from",
            "adp",
            "--adp-version",
            "unversioned",
            "-o",
        ])
        .arg(&out)
        .arg("--rejects")
        .arg(&rejects)
        .arg("-")
        .write_stdin(format!("{linked}\n{plain}\n"))
        .output()
        .expect("runs");
    assert_eq!(result.status.code(), Some(1), "a rejected record exits 1");
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(stderr.contains("2 records in, 1 written"), "{stderr}");
    assert!(stderr.contains("version-fit"), "{stderr}");
    let written = json_lines(&std::fs::read(&out).expect("output"));
    assert_eq!(written.len(), 1);
    assert_eq!(written[0]["id"], "plain");
    assert!(written[0].get("schema_version").is_none());
    let rejected = json_lines(&std::fs::read(&rejects).expect("rejects"));
    assert_eq!(rejected.len(), 1);
    assert_eq!(rejected[0]["record"], linked);
    assert_eq!(rejected[0]["stage"], "convert");
    let pointers: Vec<&str> = rejected[0]["diagnostics"]
        .as_array()
        .expect("diagnostics")
        .iter()
        .filter_map(|d| d["pointer"].as_str())
        .collect();
    // available_code_languages is derived data and is dropped; the link ids cannot be written.
    assert_eq!(
        pointers,
        vec![
            "/content/1/tool_call_id",
            "/content/2/tool_call_id",
            "/content/3/tool_call_id",
            "/content/4/tool_call_id"
        ]
    );
    let leftovers: Vec<String> = std::fs::read_dir(out.parent().expect("parent"))
        .expect("dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        leftovers,
        vec!["out.jsonl"],
        "no temporary file left behind"
    );
}

#[test]
fn decode_details_turns_json_strings_into_values_only_where_asked() {
    let record = json!({"id": "d1", "content": [], "details": {
        "tools": "[{\"name\": \"bash\"}]", "eval": "{\"ok\": true}", "text": "{not json"
    }});
    let run = |extra: &[&str]| -> Value {
        let out = trajkit()
            .args(["convert", "-q", "--from", "adp"])
            .args(extra)
            .arg("-")
            .write_stdin(format!("{record}\n"))
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(0));
        json_lines(&out.stdout).remove(0)
    };
    let untouched = run(&[]);
    assert_eq!(untouched["details"], record["details"]);
    let some = run(&["--decode-details", "tools"]);
    assert_eq!(some["details"]["tools"], json!([{"name": "bash"}]));
    assert_eq!(some["details"]["eval"], "{\"ok\": true}");
    let all = run(&["--decode-details", "*"]);
    assert_eq!(all["details"]["eval"], json!({"ok": true}));
    assert_eq!(all["details"]["text"], "{not json");
    trajkit()
        .args([
            "convert",
            "--adp-version",
            "1.0.0",
            "--decode-details",
            "*",
            "-",
        ])
        .write_stdin("")
        .assert()
        .code(2);
}

#[test]
fn stats_counts_the_sample_data() {
    let out = trajkit()
        .args(["stats", "--json"])
        .arg(sample_data().join("adp"))
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0));
    let s: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    // Counted by hand from the fixtures in sample_data/adp/.
    assert_eq!(s["records"], 5);
    assert_eq!(s["valid"], 5);
    assert_eq!(s["steps"], 21);
    assert_eq!(s["actions"], 10);
    assert_eq!(s["observations"], 11);
    assert_eq!(s["code_languages"], json!({"bash": 2, "python": 1}));
    assert_eq!(
        s["functions"],
        json!({"book_table": 1, "click": 1, "stop": 1})
    );
    assert_eq!(
        s["versions"],
        json!({"1.2.0": 1, "1.5.0": 2, "unversioned": 2})
    );
    assert_eq!(s["steps_by_class"]["web_observation"], 2);
}

#[test]
fn schema_and_formats_commands() {
    let out = trajkit().args(["schema", "adp"]).output().expect("runs");
    let schema: Value = serde_json::from_slice(&out.stdout).expect("schema is JSON");
    assert_eq!(schema["properties"]["schema_version"]["const"], "1.5.0");
    let out = trajkit()
        .args(["schema", "adp@unversioned"])
        .output()
        .expect("runs");
    let schema: Value = serde_json::from_slice(&out.stdout).expect("schema is JSON");
    assert!(schema["properties"].get("schema_version").is_none());
    trajkit().args(["schema", "nope"]).assert().code(2);
    let out = trajkit().args(["formats"]).output().expect("runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("adp "), "{text}");
    for format in ["swe-agent ", "openhands "] {
        assert!(text.contains(format), "{text}");
    }
    assert!(!text.contains("not supported yet"), "{text}");
}

#[test]
fn quiet_means_nothing_on_stderr_even_with_many_rejects() {
    let bad: String = (0..30).map(|i| format!("{{\"id\": \"b{i}\"}}\n")).collect();
    let out = trajkit()
        .args(["-q", "convert", "--from", "adp", "-"])
        .write_stdin(bad.clone())
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1), "every record is rejected");
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = trajkit()
        .args(["convert", "--from", "adp", "-"])
        .write_stdin(bad)
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("... and 10 more diagnostics"), "{stderr}");
}

/// Every command's `--help` shows its examples one a line, as written: clap re-wraps doc
/// comments, so examples live in `after_help` (or stand alone on one line).
#[test]
fn help_examples_are_one_a_line() {
    let commands = [
        "validate",
        "convert",
        "join",
        "redact",
        "export",
        "run",
        "merge-manifests",
        "stats",
        "report",
        "show",
        "schema",
        "formats",
    ];
    for command in commands {
        let out = trajkit().args([command, "--help"]).output().expect("runs");
        let help = String::from_utf8_lossy(&out.stdout);
        let example = format!("trajkit {command}");
        let examples: Vec<&str> = help
            .lines()
            .filter(|l| !l.starts_with("Usage:"))
            .filter(|l| l.ends_with(&example) || l.contains(&format!("{example} ")))
            .collect();
        assert!(
            !examples.is_empty(),
            "{command} --help has no example:\n{help}"
        );
        // Reflowed examples run together on one line.
        for line in examples {
            assert_eq!(line.matches(&example).count(), 1, "{command}: {line:?}");
        }
    }
    let out = trajkit()
        .args(["convert", "--help"])
        .output()
        .expect("runs");
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(
        help.lines()
            .any(|l| l
                == "  trajkit convert --from adp old.json.gz --adp-version 1.3.0 -o v13.jsonl"),
        "{help}"
    );
}
