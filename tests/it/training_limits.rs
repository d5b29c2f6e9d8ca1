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
        // A string doubled in a loop (the run grew past 2.6 GB and aborted): it holds more than
        // its memory budget before its copies spend its fuel.
        ("{% set ns = namespace(s='ab') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s }}", "ran out of its memory budget"),
        // A huge indent.
        ("{{ messages|tojson(indent=1000000000) }}", "over the limit of 64"),
        // Nested loops of 10^10 steps.
        ("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", "ran out of its budget"),
        // 50 million spaces (more than the memory budget of the record), to be split into a
        // list.
        ("{{ (' ' * 50000000).split(' ')|length }}", "ran out of its memory budget"),
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

/// Templates that build what minijinja copies or writes without asking its fuel, each with
/// what its record's rejection says: the rendering held more than its memory budget.
const MEMORY_BOMBS: [(&str, &str); 4] = [
    // A list doubled 40 times: past 32 concatenations of concatenations minijinja copies the
    // whole list at once (2^33 items; the run aborted with SIGABRT).
    (
        "{% set ns = namespace(l=[1, 2]) %}{% for i in range(40) %}{% set ns.l = ns.l + ns.l %}{% endfor %}{{ ns.l|length }}",
        "ran out of its memory budget",
    ),
    // A dict holding itself twice, 40 deep, written as a string (2^40 entries; aborted).
    (
        "{% set ns = namespace(d={'a': 1}) %}{% for i in range(40) %}{% set ns.d = {'x': ns.d, 'y': ns.d} %}{% endfor %}{{ ns.d|string|length }}",
        "ran out of its memory budget",
    ),
    // A list doubled lazily 30 times, then written as one string (ran for minutes).
    (
        "{% set ns = namespace(l=['ab']) %}{% for i in range(30) %}{% set ns.l = ns.l + ns.l %}{% endfor %}{{ ns.l|string|length }}",
        "ran out of its memory budget",
    ),
    // Tuples added together (copied at each addition), doubled in a loop.
    (
        "{% set ns = namespace(t=('a', 'b')) %}{% for i in range(40) %}{% set ns.t = ns.t + ns.t %}{% endfor %}{{ ns.t|length }}",
        "ran out of its memory budget",
    ),
];

/// Runs `trajkit export --to tokens` with `template` on `trajectories` in `tmp`: exit code,
/// rejects, seconds taken and peak resident memory in bytes (read from /proc while it runs).
fn export_measured(
    tmp: &Path,
    template: &str,
    trajectories: &[Value],
    extra: &[&str],
) -> (i32, String, f64, u64) {
    let path = tmp.join("t.jinja");
    std::fs::write(&path, template).expect("write");
    let input = write_input(tmp, trajectories);
    let rejects = tmp.join("rejects.jsonl");
    let started = Instant::now();
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("trajkit"))
        .args(["export", "-q", "--to", "tokens", "-o"])
        .arg(tmp.join("out"))
        .arg("--chat-template")
        .arg(&path)
        .arg("--tokenizer")
        .arg(fixture("words.tokenizer.json"))
        .arg("--rejects")
        .arg(&rejects)
        .args(extra)
        .arg(&input)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("runs");
    let status = format!("/proc/{}/status", child.id());
    let mut peak = 0;
    let code = loop {
        if let Some(s) = child.try_wait().expect("waits") {
            break s.code().unwrap_or(-1);
        }
        // VmHWM: the peak resident set so far.
        let hwm = std::fs::read_to_string(&status)
            .unwrap_or_default()
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|kb| kb.trim().trim_end_matches(" kB").trim().parse::<u64>().ok());
        peak = peak.max(hwm.unwrap_or(0) * 1024);
        std::thread::sleep(Duration::from_millis(5));
    };
    (
        code,
        std::fs::read_to_string(&rejects).unwrap_or_default(),
        started.elapsed().as_secs_f64(),
        peak,
    )
}

/// The seconds a bomb may take: under 10 in release, as the robustness audit asks (a debug
/// build of minijinja is several times slower).
const BOMB_SECONDS: f64 = if cfg!(debug_assertions) { 90.0 } else { 10.0 };

#[test]
fn a_template_past_its_memory_budget_rejects_its_record_in_bounded_time_and_memory() {
    if !cfg!(target_os = "linux") {
        return; // (the peak is read from /proc)
    }
    for (bomb, want) in MEMORY_BOMBS {
        let tmp = tempfile::tempdir().expect("temp dir");
        let (code, rejects, secs, peak) = export_measured(
            tmp.path(),
            &bombing(bomb),
            &[trajectory("calm", "task"), trajectory("bomb", "boom")],
            &[],
        );
        assert_eq!(code, 1, "{bomb}: {rejects}");
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
        assert!(secs < BOMB_SECONDS, "{bomb}: {secs:.1} s");
        assert!(peak < 1 << 30, "{bomb}: peak RSS {} MB", peak >> 20);
    }
}

#[test]
fn past_the_stopped_renderings_a_run_may_keep_every_rendering_is_refused() {
    if !cfg!(target_os = "linux") {
        return;
    }
    // Ten records over their budgets: eight renderings stop and keep what they held, the
    // rest are refused without rendering; the run ends, every record rejected with a reason.
    // (One thread: with more, each other worker may stop one more before it sees the count.)
    let bombs: Vec<Value> = (0..10)
        .map(|i| trajectory(&format!("bomb-{i}"), "boom"))
        .collect();
    let tmp = tempfile::tempdir().expect("temp dir");
    let (code, rejects, _, peak) = export_measured(
        tmp.path(),
        &bombing(MEMORY_BOMBS[0].0),
        &bombs,
        &["--threads", "1"],
    );
    assert_eq!(code, 1, "{rejects}");
    assert_eq!(
        rejects.matches("ran out of its memory budget").count(),
        8,
        "{rejects}"
    );
    assert_eq!(
        rejects.matches("not rendered: 8 renderings").count(),
        2,
        "{rejects}"
    );
    let out = tmp.path().join("out");
    assert_eq!(manifest(&out)["counts"]["rejected"], json!(10));
    assert!(!out.join(".trajkit.lock").exists(), "the lock is left");
    assert!(peak < 1 << 30, "peak RSS {} MB", peak >> 20);
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
