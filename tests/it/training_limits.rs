//! What a hostile chat template, tokenizer file or record may cost an export: a template's
//! budget per record, tokenizer files refused at load, library panics caught, and the largest
//! message (docs/training.md, "Limits").

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::{trajkit, valid_v15};
use crate::training::{export_with_template, fixture, manifest, write_input};

/// `valid_v15` with another id and its first text replaced by `text`.
fn trajectory(id: &str, text: &str) -> Value {
    let mut t = valid_v15();
    t["id"] = json!(id);
    t["content"][0]["content"] = json!(text);
    t
}

/// Exports `trajectories` with `template` (a Jinja text) to `tmp/out`; exit code, stderr and
/// the rejects file's text.
fn export(
    tmp: &Path,
    template: &str,
    trajectories: &[Value],
    extra: &[&str],
) -> (i32, String, String) {
    let path = tmp.join("t.jinja");
    std::fs::write(&path, template).expect("write");
    let input = write_input(tmp, trajectories);
    let rejects = tmp.join("rejects.jsonl");
    let mut args = vec!["--rejects", rejects.to_str().expect("utf-8 path")];
    args.extend_from_slice(extra);
    let (code, err) = export_with_template("tokens", &input, &tmp.join("out"), &path, &args);
    (
        code,
        err,
        std::fs::read_to_string(&rejects).unwrap_or_default(),
    )
}

/// A ChatML template that runs `bomb` on a message holding `boom`.
fn bombing(bomb: &str) -> String {
    format!(
        "{{% for m in messages %}}{{% if 'boom' in m.content %}}{bomb}{{% endif %}}\
         <|im_start|>{{{{ m.role }}}}\n{{{{ m.content }}}}<|im_end|>\n{{% endfor %}}"
    )
}

#[test]
fn a_template_that_builds_or_loops_without_bound_rejects_its_record_and_the_run_goes_on() {
    let bombs = [
        // A string doubled in a loop (the run grew past 2.6 GB and aborted).
        ("{% set ns = namespace(s='ab') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s }}", "ran out of its budget"),
        // A huge indent.
        ("{{ messages|tojson(indent=1000000000) }}", "over the limit of 64"),
        // Nested loops of 10^10 steps.
        ("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", "ran out of its budget"),
        // 50 million spaces split into a list.
        ("{{ (' ' * 50000000).split(' ')|length }}", "str.split would make a list"),
    ];
    for (bomb, want) in bombs {
        let tmp = tempfile::tempdir().expect("temp dir");
        let started = Instant::now();
        let (code, err, rejects) = export(
            tmp.path(),
            &bombing(bomb),
            &[trajectory("calm", "task"), trajectory("bomb", "boom")],
            &[],
        );
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "{bomb}: too slow"
        );
        assert_eq!(code, 1, "{bomb}: {err}");
        assert!(
            rejects.contains("chat-template")
                && rejects.contains(want)
                && rejects.contains("\"bomb\""),
            "{bomb}: {rejects}"
        );
        let out = tmp.path().join("out");
        let counts = &manifest(&out)["counts"];
        assert_eq!(
            (&counts["written"], &counts["rejected"]),
            (&json!(1), &json!(1)),
            "{bomb}"
        );
        assert!(
            !out.join(".trajkit.lock").exists(),
            "{bomb}: the lock is left"
        );
    }
}

/// The words tokenizer of the fixtures with `part` set to `value`, written to `tmp`.
fn tokenizer_with(tmp: &Path, part: &str, value: Value) -> std::path::PathBuf {
    let text = std::fs::read_to_string(fixture("words.tokenizer.json")).expect("fixture");
    let mut json: Value = serde_json::from_str(&text).expect("json");
    json[part] = value;
    let path = tmp.join("tokenizer.json");
    std::fs::write(&path, json.to_string()).expect("write");
    path
}

#[test]
fn a_tokenizer_file_that_panics_or_varies_is_refused_naming_the_file_and_the_setting() {
    let replace_empty = json!({"type": "Sequence", "normalizers": [
        {"type": "Replace", "pattern": {"String": ""}, "content": "x"},
        {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true,
         "strip_accents": null, "lowercase": true}]});
    let dropout = json!({"type": "BPE", "dropout": 0.3, "unk_token": "[UNK]",
        "vocab": {"[UNK]": 0, "t": 1, "a": 2, "ta": 3}, "merges": ["t a"]});
    let cases = [
        (
            "normalizer",
            replace_empty,
            "/normalizer/normalizers/0/pattern",
        ),
        ("model", dropout, "/model/dropout"),
        (
            "pre_tokenizer",
            json!({"type": "FixedLength", "length": 0}),
            "/pre_tokenizer/length",
        ),
    ];
    for (part, value, pointer) in cases {
        let tmp = tempfile::tempdir().expect("temp dir");
        let tokenizer = tokenizer_with(tmp.path(), part, value);
        let input = write_input(tmp.path(), &[valid_v15()]);
        let out = tmp.path().join("out");
        let template = fixture("chatml_tools.jinja");
        let export = trajkit()
            .args(["export", "-q", "--to", "tokens", "-o"])
            .arg(&out)
            .arg("--chat-template")
            .arg(&template)
            .arg("--tokenizer")
            .arg(&tokenizer)
            .arg(&input)
            .output()
            .expect("runs");
        let stats = trajkit()
            .args(["stats", "--chat-template"])
            .arg(&template)
            .arg("--tokenizer")
            .arg(&tokenizer)
            .arg(&input)
            .output()
            .expect("runs");
        for (what, o) in [("export", export), ("stats", stats)] {
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(2), "{what} {pointer}: {err}");
            assert!(
                err.contains(tokenizer.to_str().expect("utf-8")) && err.contains(pointer),
                "{what}: {err}"
            );
        }
        assert!(
            !out.exists(),
            "{pointer}: a refused run made its output directory"
        );
    }
}

#[test]
fn a_message_over_max_message_bytes_rejects_its_record_before_rendering() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let template =
        "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}";
    let big = "task ".repeat(400);
    let (code, err, rejects) = export(
        tmp.path(),
        template,
        &[trajectory("small", "task"), trajectory("big", &big)],
        &["--max-message-bytes", "1000"],
    );
    assert_eq!(code, 1, "{err}");
    assert!(
        rejects.contains("max-message-bytes")
            && rejects.contains("message 0 (user) is ")
            && rejects.contains("bytes of JSON, over --max-message-bytes 1000")
            && rejects.contains("\"big\""),
        "{rejects}"
    );
    assert_eq!(
        manifest(&tmp.path().join("out"))["options"]["max_message_bytes"],
        1000
    );
    // The default is far above both.
    let again = tempfile::tempdir().expect("temp dir");
    let (code, err, _) = export(
        again.path(),
        template,
        &[trajectory("small", "task"), trajectory("big", &big)],
        &[],
    );
    assert_eq!(code, 0, "{err}");
    // Only where a template renders.
    let o = trajkit()
        .args([
            "export",
            "-q",
            "--to",
            "hf",
            "--max-message-bytes",
            "10",
            "-o",
        ])
        .arg(tmp.path().join("hf"))
        .arg(tmp.path().join("in.jsonl"))
        .output()
        .expect("runs");
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("--max-message-bytes needs --chat-template")
    );
}
