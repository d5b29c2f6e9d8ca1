//! Robustness of input framing and JSON reading: stray bytes between documents end neither in a
//! hang nor in an endless stream of rejects, UTF-16 input is named, duplicate keys and integers
//! past 64 bits are rejected, `--from auto` looks past damaged records, JUnit stays XML.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::common::{json_lines, trajkit, valid_v15};
use serde_json::Value;

/// Every command is stopped after this long: a hang fails the test instead of filling the disk.
const LIMIT: Duration = Duration::from_secs(20);

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    fs::write(&p, bytes).expect("write fixture");
    p
}

fn s(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// Runs trajkit with `args` under [`LIMIT`]; (exit code, stdout, stderr).
fn run(args: &[String], dir: &Path) -> (i32, Vec<u8>, String) {
    let out = trajkit()
        .current_dir(dir)
        .args(args)
        .timeout(LIMIT)
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let code = out
        .status
        .code()
        .unwrap_or_else(|| panic!("{args:?} killed (hang?): {stderr}"));
    assert_ne!(code, 101, "{args:?} panicked: {stderr}");
    (code, out.stdout, stderr)
}

/// The diagnostics `validate --report json` gives for `path`.
fn validate(path: &Path) -> (i32, Vec<Value>) {
    let (code, out, _) = run(
        &["validate".into(), "--report".into(), "json".into(), s(path)],
        path.parent().expect("dir"),
    );
    (code, json_lines(&out))
}

#[test]
fn stray_bytes_after_a_document_are_one_reject_in_every_command() {
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path();
    let good = valid_v15().to_string();
    for ext in ["json", "traj"] {
        for stray in [",", "]", "}", ", ]\n}"] {
            let name = format!("in-{}.{ext}", stray.len());
            let input = write(dir, &name, format!("{good}{stray}\n").as_bytes());
            let what = format!("{name} with {stray:?}");
            let rejects = dir.join("rejects.jsonl");
            let out = dir.join("out");
            let _ = fs::remove_dir_all(&out);
            let _ = fs::remove_file(&rejects);
            let pipeline = write(
                dir,
                "p.toml",
                format!(
                    "[[input]]\npath = \"{}\"\nformat = \"adp\"\n\n[validate]\nmax_reject_rate = 1.0\n\
                     rejects = \"{}\"\n\n[[export]]\nto = \"adp\"\noutput = \"{}\"\n",
                    s(&input),
                    s(&rejects),
                    s(&out.join("run"))
                )
                .as_bytes(),
            );
            let commands: Vec<Vec<String>> = vec![
                vec!["convert", "-q", "--from", "adp", "-o"]
                    .into_iter()
                    .map(String::from)
                    .chain([
                        s(&out.join("c.jsonl")),
                        "--rejects".into(),
                        s(&rejects),
                        s(&input),
                    ])
                    .collect(),
                vec![
                    "validate".into(),
                    "--rejects".into(),
                    s(&rejects),
                    s(&input),
                ],
                vec!["stats".into(), s(&input)],
                vec!["export", "-q", "--to", "openai", "-o"]
                    .into_iter()
                    .map(String::from)
                    .chain([
                        s(&out.join("e")),
                        "--rejects".into(),
                        s(&rejects),
                        s(&input),
                    ])
                    .collect(),
                vec!["run".into(), "-q".into(), s(&pipeline)],
            ];
            for args in commands {
                let _ = fs::remove_file(&rejects);
                let (code, _, stderr) = run(&args, dir);
                assert!(code <= 1, "{what}: {args:?}: exit {code}: {stderr}");
                if args[0] != "stats" {
                    let lines = json_lines(&fs::read(&rejects).expect("rejects written"));
                    assert_eq!(lines.len(), 1, "{what}: {args:?}: {lines:?}");
                    let line = lines[0].to_string();
                    let first = stray.chars().next().expect("a byte");
                    let message = format!("expected a JSON value, found {first:?}");
                    assert!(line.contains("json-syntax"), "{what}: {args:?}: {line}");
                    assert!(line.contains(&message), "{what}: {args:?}: {line}");
                }
            }
        }
    }
}

#[test]
fn stray_bytes_between_documents_are_skipped_and_reading_goes_on() {
    let tmp = tempfile::tempdir().expect("tmp");
    let good = valid_v15().to_string();
    let p = write(
        tmp.path(),
        "d.json",
        format!("{good},\n,\n{good}\n]").as_bytes(),
    );
    let (code, diags) = validate(&p);
    assert_eq!(code, 1);
    let got: Vec<(u64, String, String)> = diags
        .iter()
        .map(|d| {
            (
                d["line"].as_u64().unwrap_or(0),
                d["rule"].as_str().unwrap_or("").to_owned(),
                d["message"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    let expected = |line: u64, found: &str| {
        (
            line,
            "json-syntax".to_owned(),
            format!("expected a JSON value, found '{found}'"),
        )
    };
    assert_eq!(got, vec![expected(1, ","), expected(4, "]")]);
}

#[test]
fn a_broken_array_stops_the_input_with_one_syntax_error() {
    let tmp = tempfile::tempdir().expect("tmp");
    let good = valid_v15().to_string();
    for (text, found) in [
        (format!("[{good},]"), "]"),
        (format!("[,{good}]"), ","),
        ("[}".to_owned(), "}"),
        (format!("[{good},:]"), ":"),
    ] {
        let p = write(tmp.path(), "a.json", text.as_bytes());
        let (code, diags) = validate(&p);
        assert_eq!(code, 1, "{text}");
        assert_eq!(diags.len(), 1, "{text}: {diags:?}");
        assert_eq!(diags[0]["rule"], "json-syntax");
        assert_eq!(
            diags[0]["message"],
            format!("expected a JSON value, found '{found}'")
        );
    }
}

#[test]
fn utf16_and_utf32_input_is_named_with_how_to_convert_it() {
    let tmp = tempfile::tempdir().expect("tmp");
    let text = format!("{}\n", valid_v15());
    let le: Vec<u8> = text.encode_utf16().flat_map(u16::to_le_bytes).collect();
    let be: Vec<u8> = text.encode_utf16().flat_map(u16::to_be_bytes).collect();
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "le.jsonl",
            [&[0xFF, 0xFE][..], &le].concat(),
            "the input is UTF-16 (little-endian) (byte-order mark FF FE), not UTF-8; convert it \
             first, e.g. `iconv -f UTF-16 -t UTF-8 in.json > out.json`",
        ),
        (
            "be.json",
            [&[0xFE, 0xFF][..], &be].concat(),
            "the input is UTF-16 (big-endian) (byte-order mark FE FF), not UTF-8; convert it \
             first, e.g. `iconv -f UTF-16 -t UTF-8 in.json > out.json`",
        ),
        (
            "nobom.jsonl",
            le,
            "the input is UTF-16 (little-endian) (a NUL byte after each of its first \
             characters), not UTF-8; convert it first, e.g. `iconv -f UTF-16LE -t UTF-8 in.json \
             > out.json`",
        ),
        (
            "utf32.json",
            [0xFF, 0xFE, 0, 0, b'{', 0, 0, 0].to_vec(),
            "the input is UTF-32 (little-endian) (byte-order mark FF FE 00 00), not UTF-8; \
             convert it first, e.g. `iconv -f UTF-32 -t UTF-8 in.json > out.json`",
        ),
    ];
    for (name, bytes, message) in cases {
        let p = write(tmp.path(), name, &bytes);
        let (code, diags) = validate(&p);
        assert_eq!(code, 1, "{name}");
        assert_eq!(diags.len(), 1, "{name}: {diags:?}");
        assert_eq!(diags[0]["rule"], "json-encoding", "{name}");
        assert_eq!(diags[0]["message"], message, "{name}");
    }
}

/// The diagnostics `convert --from FORMAT` gives for the lines `text` (rejects file lines).
fn convert_rejects(format: &str, name: &str, text: &str) -> (i32, Vec<Value>, Vec<Value>) {
    let tmp = tempfile::tempdir().expect("tmp");
    let p = write(tmp.path(), name, text.as_bytes());
    let rejects = tmp.path().join("rejects.jsonl");
    let (code, out, stderr) = run(
        &[
            "convert".into(),
            "-q".into(),
            "--from".into(),
            format.into(),
            "--rejects".into(),
            s(&rejects),
            s(&p),
        ],
        tmp.path(),
    );
    assert!(code <= 1, "{stderr}");
    let rejects = json_lines(&fs::read(&rejects).unwrap_or_default());
    (code, json_lines(&out), rejects)
}

/// (rule, pointer, message) of each reject's diagnostic.
fn reasons(rejects: &[Value]) -> Vec<(String, String, String)> {
    rejects
        .iter()
        .flat_map(|r| r["diagnostics"].as_array().cloned().unwrap_or_default())
        .map(|d| {
            let t = |k: &str| d[k].as_str().unwrap_or("").to_owned();
            (t("rule"), t("pointer"), t("message"))
        })
        .collect()
}

#[test]
fn a_duplicate_key_is_rejected_with_its_pointer_on_every_path() {
    let mut dup = valid_v15().to_string();
    // In a step (read by the fast reader) ...
    dup = dup.replacen(
        "\"content\":\"ls\"",
        "\"content\":\"ls\",\"content\":\"rm\"",
        1,
    );
    let expected = (
        "json-duplicate-key".to_owned(),
        "/content/1/content".to_owned(),
        "duplicate key \"content\" in an object (JSON readers would keep only its last value)"
            .to_owned(),
    );
    assert!(dup.contains("\"rm\""), "{dup}");
    let text = format!("{}\n{dup}\n", valid_v15());
    // ADP through validate (serde_json only) and convert (the fast reader, then serde_json).
    let tmp = tempfile::tempdir().expect("tmp");
    let p = write(tmp.path(), "dup.jsonl", text.as_bytes());
    let (code, diags) = validate(&p);
    assert_eq!(code, 1);
    assert_eq!(diags.len(), 1, "{diags:?}");
    assert_eq!(diags[0]["rule"], expected.0);
    assert_eq!(diags[0]["pointer"], expected.1);
    assert_eq!(diags[0]["message"], expected.2);
    assert_eq!(diags[0]["line"], 2);
    let (code, out, rejects) = convert_rejects("adp", "dup.jsonl", &text);
    assert_eq!((code, out.len()), (1, 1));
    assert_eq!(reasons(&rejects), vec![expected]);
}

#[test]
fn integers_past_64_bits_are_rejected_not_rounded() {
    let mut big = valid_v15();
    big["details"] = serde_json::json!({"n": 0});
    let text = big
        .to_string()
        .replace("\"n\":0", "\"n\":18446744073709551616");
    let expected = (
        "json-number-range".to_owned(),
        "/details/n".to_owned(),
        "integer 18446744073709551616 does not fit in 64 bits; trajkit would lose digits — \
         store it as a string"
            .to_owned(),
    );
    let (code, out, rejects) = convert_rejects("adp", "big.jsonl", &format!("{text}\n"));
    assert_eq!((code, out.len()), (1, 0));
    assert_eq!(reasons(&rejects), vec![expected.clone()]);
    let tmp = tempfile::tempdir().expect("tmp");
    let p = write(tmp.path(), "big.jsonl", text.as_bytes());
    let (code, diags) = validate(&p);
    assert_eq!(code, 1);
    assert_eq!(diags[0]["rule"], expected.0);
    assert_eq!(diags[0]["pointer"], expected.1);
    // u64::MAX itself, and floats, are numbers as before.
    let fine = text.replace("18446744073709551616", "18446744073709551615");
    let (code, out, _) = convert_rejects("adp", "fine.jsonl", &format!("{fine}\n"));
    assert_eq!((code, out.len()), (0, 1));
    let float = text.replace("18446744073709551616", "1.8446744073709552e19");
    let (code, out, _) = convert_rejects("adp", "float.jsonl", &format!("{float}\n"));
    assert_eq!((code, out.len()), (0, 1));
}

#[test]
fn ledgermind_event_ids_past_64_bits_do_not_collide() {
    let event = |id: &str| {
        format!(
            "{{\"id\": {id}, \"source\": \"user\", \"kind\": \"prompt\", \"content\": \"c\", \
             \"context\": {{\"session_id\": \"s-1\"}}, \"timestamp\": \"2026-03-04T10:00:00\"}}"
        )
    };
    let text = format!(
        "{}\n{}\n",
        event("18446744073709551616"),
        event("18446744073709551617")
    );
    let (code, _, rejects) = convert_rejects("ledgermind", "events.jsonl", &text);
    assert_eq!(code, 1);
    let got = reasons(&rejects);
    assert_eq!(got.len(), 2, "{got:?}");
    for (rule, pointer, message) in got {
        assert_eq!(rule, "json-number-range");
        assert_eq!(pointer, "/id");
        assert!(
            message.starts_with("integer 1844674407370955161"),
            "{message}"
        );
    }
}

#[test]
fn auto_detection_looks_past_records_that_do_not_parse() {
    let tmp = tempfile::tempdir().expect("tmp");
    let good = valid_v15().to_string();
    let p = write(
        tmp.path(),
        "mixed.jsonl",
        format!("{{\"id\": \"cut\n{good}\n").as_bytes(),
    );
    let rejects = tmp.path().join("rejects.jsonl");
    let (code, out, stderr) = run(
        &["convert".into(), "--rejects".into(), s(&rejects), s(&p)],
        tmp.path(),
    );
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("mixed.jsonl: detected adp"), "{stderr}");
    assert_eq!(json_lines(&out).len(), 1);
    let lines = json_lines(&fs::read(&rejects).expect("rejects"));
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["line"], 1);
    // No record parses: detection fails, naming the first.
    let bad = write(tmp.path(), "bad.jsonl", b"{\"id\": \"cut\n[1,\n");
    let (code, _, stderr) = run(&["convert".into(), s(&bad)], tmp.path());
    assert_eq!(code, 2);
    assert!(
        stderr.contains("its first record (line 1) is not JSON (EOF while parsing a string at line 1 column 11), nor is any record after it; name it with --from"),
        "{stderr}"
    );
}

#[test]
fn junit_reports_stay_xml_whatever_an_id_holds() {
    let tmp = tempfile::tempdir().expect("tmp");
    let mut bad = valid_v15();
    bad["id"] = Value::String("odd\u{FFFE}\u{1}id".into());
    bad["content"] = Value::Null;
    let p = write(tmp.path(), "x.jsonl", format!("{bad}\n").as_bytes());
    let (code, out, _) = run(
        &["validate".into(), "--report".into(), "junit".into(), s(&p)],
        tmp.path(),
    );
    assert_eq!(code, 1);
    let xml = String::from_utf8(out).expect("utf-8");
    assert!(!xml.contains('\u{FFFE}') && !xml.contains('\u{1}'), "{xml}");
    assert!(xml.contains("id odd\u{FFFD}\u{FFFD}id"), "{xml}");
}
