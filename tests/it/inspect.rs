//! Inspect AI logs: `.eval` archives and `.json` logs, one trajectory per sample and epoch;
//! tool calls kept and linked, scores as rewards, damaged archives and logs diagnosed.

use std::path::{Path, PathBuf};

use crate::common::{
    agent_logs, convert, files_in, inspect_samples, json_lines, sample_data, step_classes, trajkit,
    validate_adp,
};
use serde_json::{json, Value};

/// Entries [`zip_stored`] compresses with zstd.
const ZSTD: &[&str] = &["samples/vault-pin_epoch_1.json"];

fn sample_log() -> PathBuf {
    sample_data().join("inspect/ctf_basics.json")
}

fn sample_log_value() -> Value {
    serde_json::from_str(&std::fs::read_to_string(sample_log()).expect("sample")).expect("json")
}

/// A zip archive of stored (uncompressed) entries, written by hand: `bad_crc` names an entry
/// whose checksum is written wrong; entries named in `ZSTD` are compressed with zstd (method
/// 93, what Inspect writes with `INSPECT_USE_ZSTD`).
fn zip_stored(entries: &[(&str, Vec<u8>)], bad_crc: Option<&str>) -> Vec<u8> {
    fn crc32(data: &[u8]) -> u32 {
        let mut c = !0u32;
        for &b in data {
            c ^= u32::from(b);
            for _ in 0..8 {
                c = if c & 1 != 0 {
                    (c >> 1) ^ 0xEDB8_8320
                } else {
                    c >> 1
                };
            }
        }
        !c
    }
    let mut out = Vec::new();
    let mut central = Vec::new();
    for (name, data) in entries {
        let mut crc = crc32(data);
        if bad_crc == Some(name) {
            crc ^= 1;
        }
        let (method, stored) = if ZSTD.contains(name) {
            (93u16, zstd::encode_all(&data[..], 3).expect("zstd"))
        } else {
            (0u16, data.clone())
        };
        let offset = out.len() as u32;
        let common = |v: &mut Vec<u8>| {
            v.extend_from_slice(&20u16.to_le_bytes()); // version needed
            v.extend_from_slice(&0u16.to_le_bytes()); // flags
            v.extend_from_slice(&method.to_le_bytes());
            v.extend_from_slice(&0u16.to_le_bytes()); // time
            v.extend_from_slice(&0x21u16.to_le_bytes()); // 1980-01-01
            v.extend_from_slice(&crc.to_le_bytes());
            v.extend_from_slice(&(stored.len() as u32).to_le_bytes());
            v.extend_from_slice(&(data.len() as u32).to_le_bytes());
            v.extend_from_slice(&(name.len() as u16).to_le_bytes());
            v.extend_from_slice(&0u16.to_le_bytes()); // extra
        };
        out.extend_from_slice(&0x0403_4b50u32.to_le_bytes());
        common(&mut out);
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(&stored);
        central.extend_from_slice(&0x0201_4b50u32.to_le_bytes());
        central.extend_from_slice(&20u16.to_le_bytes()); // made by
        common(&mut central);
        central.extend_from_slice(&[0; 6]); // comment length, disk, internal attributes
        central.extend_from_slice(&0u32.to_le_bytes()); // external attributes
        central.extend_from_slice(&offset.to_le_bytes());
        central.extend_from_slice(name.as_bytes());
    }
    let at = out.len() as u32;
    out.extend_from_slice(&central);
    out.extend_from_slice(&0x0605_4b50u32.to_le_bytes());
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&(entries.len() as u16).to_le_bytes());
    out.extend_from_slice(&(entries.len() as u16).to_le_bytes());
    out.extend_from_slice(&(central.len() as u32).to_le_bytes());
    out.extend_from_slice(&at.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out
}

/// The sample log as an `.eval` archive: `header.json` (the log without its samples) and one
/// entry per sample, pretty-printed as Inspect writes them.
fn eval_entries(log: &Value) -> Vec<(String, Vec<u8>)> {
    let mut header = log.clone();
    let samples = header
        .as_object_mut()
        .and_then(|o| o.remove("samples"))
        .expect("samples");
    let pretty = |v: &Value| serde_json::to_vec_pretty(v).expect("json");
    let mut entries = vec![("header.json".to_owned(), pretty(&header))];
    for s in samples.as_array().expect("list") {
        let id = match &s["id"] {
            Value::String(x) => x.clone(),
            other => other.to_string(),
        };
        entries.push((format!("samples/{id}_epoch_{}.json", s["epoch"]), pretty(s)));
    }
    entries
}

fn write_zip(
    dir: &Path,
    name: &str,
    entries: &[(String, Vec<u8>)],
    bad_crc: Option<&str>,
) -> PathBuf {
    let borrowed: Vec<(&str, Vec<u8>)> = entries
        .iter()
        .map(|(n, d)| (n.as_str(), d.clone()))
        .collect();
    let path = dir.join(name);
    std::fs::write(&path, zip_stored(&borrowed, bad_crc)).expect("write");
    path
}

/// The number of tool calls in the samples of a log: assistant `tool_calls` and `tool_use`
/// parts.
fn tool_calls_in(samples: &[Value]) -> usize {
    samples
        .iter()
        .flat_map(|s| s["messages"].as_array().cloned().unwrap_or_default())
        .filter(|m| m["role"] == "assistant")
        .map(|m| {
            m["tool_calls"].as_array().map_or(0, Vec::len)
                + m["content"]
                    .as_array()
                    .map_or(0, |c| c.iter().filter(|p| p["type"] == "tool_use").count())
        })
        .sum()
}

/// The tool actions of trajectories, and checks that every observation answering a call
/// carries the id of an earlier action.
fn tool_actions_linked(trajectories: &[Value]) -> usize {
    let mut actions = 0;
    for t in trajectories {
        let mut ids = Vec::new();
        for s in t["content"].as_array().expect("content") {
            match s["class_"].as_str() {
                Some("api_action" | "code_action") => {
                    actions += 1;
                    if let Some(id) = s["tool_call_id"].as_str() {
                        ids.push(id.to_owned());
                    }
                }
                _ => {
                    if let Some(id) = s["tool_call_id"].as_str() {
                        assert!(
                            ids.iter().any(|i| i == id),
                            "{}: {id} answers no call",
                            t["id"]
                        );
                    }
                }
            }
        }
    }
    actions
}

/// `trajkit export --to TARGET` of `trajectories`: exit 0 and nothing rejected.
fn exports_cleanly(dir: &Path, trajectories: &[Value]) {
    let input = dir.join("adp.jsonl");
    let text: String = trajectories.iter().map(|t| format!("{t}\n")).collect();
    std::fs::write(&input, text).expect("write");
    for target in ["openai", "hf", "sharegpt"] {
        let out = dir.join(format!("export-{target}"));
        let rejects = dir.join(format!("rejects-{target}.jsonl"));
        let run = trajkit()
            .args(["export", "-q", "--to", target, "-o"])
            .arg(&out)
            .arg("--rejects")
            .arg(&rejects)
            .arg(&input)
            .output()
            .expect("runs");
        assert_eq!(
            run.status.code(),
            Some(0),
            "{target}: {}",
            String::from_utf8_lossy(&run.stderr)
        );
        let rejected = std::fs::read(&rejects).unwrap_or_default();
        assert!(
            rejected.is_empty(),
            "{target}: {}",
            String::from_utf8_lossy(&rejected)
        );
    }
}

#[test]
fn a_json_log_becomes_one_trajectory_per_sample() {
    let (code, out, stderr) = convert(&[&sample_log()], None, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("detected inspect"), "{stderr}");
    assert_eq!(out.len(), 2);
    let t = &out[0];
    assert_eq!(t["id"], "Mv3nTq8wZ2pLk5rXc9bYhD/b64-note/epoch-1");
    assert_eq!(
        step_classes(t),
        vec![
            "text_observation",
            "text_observation",
            "code_action",
            "text_observation",
            "api_action",
            "text_observation"
        ]
    );
    let c = t["content"].as_array().expect("content");
    assert_eq!(
        (&c[0]["name"], &c[0]["source"]),
        (&json!("system"), &json!("environment"))
    );
    assert_eq!(c[1]["source"], "user");
    assert_eq!(c[2]["language"], "bash");
    assert_eq!(c[2]["content"], "base64 -d /challenge/notes.txt.b64");
    assert_eq!(c[2]["description"], "Let me decode the note.");
    assert!(c[2]["reasoning_content"]
        .as_str()
        .is_some_and(|r| r.starts_with("The note is base64")));
    assert_eq!(
        (&c[2]["tool_call_id"], &c[3]["tool_call_id"]),
        (&json!("toolu_01"), &json!("toolu_01"))
    );
    assert_eq!(
        (&c[3]["name"], &c[3]["source"]),
        (&json!("bash"), &json!("environment"))
    );
    assert_eq!(c[4]["function"], "submit");
    assert_eq!(
        c[4]["kwargs"],
        json!({"answer": "picoCTF{b4s3_64_d3c0d3d}"})
    );
    let d = &t["details"];
    assert_eq!(d["reward"], 1.0);
    assert_eq!(d["reward_components"], json!({"includes": 1.0}));
    assert_eq!(d["outcome"]["status"], "success");
    assert_eq!(
        d["outcome"]["native"],
        json!({"scorer": "includes", "value": "C"})
    );
    assert_eq!(
        t["available_custom_tools"],
        json!(["bash", "python", "submit"])
    );
    assert_eq!(d["tools"][0]["name"], "bash");
    let inspect = &d["inspect"];
    assert_eq!(inspect["log"]["eval"]["task"], "ctf_basics");
    assert_eq!(
        inspect["log"]["eval"]["model"],
        "anthropic/claude-sonnet-4-5"
    );
    assert!(inspect["log"]["eval"]["dataset"]
        .get("sample_ids")
        .is_none());
    assert!(inspect["log"].get("results").is_none());
    assert_eq!(inspect["index"], 0);
    assert_eq!(inspect["target"], "picoCTF{b4s3_64_d3c0d3d}");
    assert_eq!(inspect["metadata"]["category"], "general");
    assert_eq!(inspect["scores"]["includes"]["value"], "C");
    assert_eq!(inspect["events"]["count"], 6);
    assert_eq!(inspect["events"]["by_type"]["tool"], 2);
    assert!(inspect.get("attachments").is_none());
    // The output's message is the conversation's fourth message: not copied again.
    assert!(inspect["output"]["choices"][0].get("message").is_none());
    assert_eq!(inspect["output"]["choices"][0]["stop_reason"], "tool_calls");
    assert_eq!(
        inspect["part_fields"][0]["pointer"],
        "/messages/2/content/0"
    );
    assert_eq!(
        inspect["part_fields"][0]["fields"]["signature"],
        "EqQBCkYIBRgCKkA0sig"
    );
    assert_eq!(d["source"]["native_ids"]["sample_id"], "b64-note");
    assert_eq!(d["source"]["native_ids"]["uuid"], "Xk2pQd8vR4mNwE7tYb3LcA");
    assert_eq!(d["source"]["line"], 122);

    let t = &out[1];
    assert_eq!(t["id"], "Mv3nTq8wZ2pLk5rXc9bYhD/vault-pin/epoch-1");
    let c = t["content"].as_array().expect("content");
    assert_eq!(c[2]["language"], "python");
    assert_eq!(c[4]["language"], "bash");
    assert_eq!(
        c[4]["description"],
        "The service asks for a PIN. I'll try to brute-force four-digit PINs."
    );
    assert_eq!(
        c[5]["content"],
        "Error: Command timed out before completing."
    );
    assert_eq!(c[6]["class_"], "message_action");
    let d = &t["details"];
    assert_eq!(
        (d["reward"].as_f64(), &d["outcome"]["status"]),
        (Some(0.0), &json!("failure"))
    );
    assert_eq!(
        d["inspect"]["tool_errors"],
        json!([{"step": 5, "id": "toolu_12", "type": "timeout", "message": "Command timed out before completing."}])
    );
    assert_eq!(validate_adp(&out), 0);
    let dir = tempfile::tempdir().expect("dir");
    exports_cleanly(dir.path(), &out);
}

#[test]
fn an_eval_archive_gives_the_same_trajectories_named_by_entry() {
    let dir = tempfile::tempdir().expect("dir");
    let log = sample_log_value();
    let archive = write_zip(dir.path(), "run.eval", &eval_entries(&log), None);
    let (code, out, stderr) = convert(&[&archive], None, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("detected inspect"), "{stderr}");
    let (_, from_json, _) = convert(&[&sample_log()], None, &[]);
    assert_eq!(out.len(), 2);
    for (a, j) in out.iter().zip(&from_json) {
        assert_eq!(a["id"], j["id"]);
        assert_eq!(a["content"], j["content"]);
        assert_eq!(a["details"]["outcome"], j["details"]["outcome"]);
    }
    let file = out[1]["details"]["source"]["file"].as_str().expect("file");
    assert!(
        file.ends_with("run.eval/samples/vault-pin_epoch_1.json"),
        "{file}"
    );
    assert_eq!(
        out[1]["details"]["inspect"]["entry"],
        "samples/vault-pin_epoch_1.json"
    );
    assert_eq!(
        out[1]["details"]["inspect"]["log"]["header_entry"],
        "header.json"
    );
    // A directory holding the archive reads it too.
    let (code, out, stderr) = convert(&[dir.path()], None, &[]);
    assert_eq!((code, out.len()), (0, 2), "{stderr}");
}

#[test]
fn a_zip_that_is_not_an_inspect_log_is_an_error_naming_it() {
    let dir = tempfile::tempdir().expect("dir");
    let path = write_zip(
        dir.path(),
        "photos.zip",
        &[("readme.txt".to_owned(), b"hello".to_vec())],
        None,
    );
    let (code, out, stderr) = convert(&[&path], Some("inspect"), &[]);
    assert_ne!(code, 0);
    assert!(out.is_empty());
    assert!(
        stderr.contains("photos.zip") && stderr.contains("not an Inspect AI log"),
        "{stderr}"
    );
    // Detection does not claim it.
    let (code, _, stderr) = convert(&[&path], None, &[]);
    assert_ne!(code, 0);
    assert!(!stderr.contains("detected inspect"), "{stderr}");
}

#[test]
fn a_sample_entry_that_cannot_be_read_is_rejected_with_its_name() {
    let dir = tempfile::tempdir().expect("dir");
    let mut entries = eval_entries(&sample_log_value());
    // One entry's checksum is wrong; another is not JSON past its third line.
    let bad = entries[1].0.clone();
    entries[2].1 = b"{\n  \"id\": \"vault-pin\",\n  \"epoch\": 1,\n  oops\n}".to_vec();
    let path = write_zip(dir.path(), "broken.eval", &entries, Some(&bad));
    let (code, out, stderr) = convert(&[&path], Some("inspect"), &[]);
    assert_eq!(code, 1, "{stderr}");
    assert!(out.is_empty());
    assert!(
        stderr.contains("broken.eval/samples/b64-note_epoch_1.json"),
        "{stderr}"
    );
    assert!(
        stderr.contains("broken.eval/samples/vault-pin_epoch_1.json:4: error[json-syntax]"),
        "{stderr}"
    );
}

#[test]
fn a_cut_eval_archive_converts_its_complete_samples() {
    let dir = tempfile::tempdir().expect("dir");
    let entries = eval_entries(&sample_log_value());
    let whole = zip_stored(
        &entries
            .iter()
            .map(|(n, d)| (n.as_str(), d.clone()))
            .collect::<Vec<_>>(),
        None,
    );
    // Cut inside the last sample entry: the central directory is gone.
    let name = b"samples/vault-pin_epoch_1.json";
    let cut = whole
        .windows(name.len())
        .position(|w| w == name)
        .expect("the entry")
        + name.len()
        + 20;
    for (name, bytes) in [("cut.eval", &whole[..cut]), ("stub.eval", &whole[..10])] {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).expect("write");
        let (code, out, stderr) = convert(&[&path], Some("inspect"), &[]);
        if name == "cut.eval" {
            assert_eq!(code, 1, "{stderr}");
            assert_eq!(out.len(), 1, "{stderr}");
            assert_eq!(out[0]["id"], "Mv3nTq8wZ2pLk5rXc9bYhD/b64-note/epoch-1");
            assert!(stderr.contains("central directory"), "{stderr}");
            assert_eq!(validate_adp(&out), 0);
        } else {
            assert_ne!(code, 0);
            assert!(out.is_empty());
            assert!(stderr.contains("stub.eval"), "{stderr}");
        }
    }
}

#[test]
fn a_cut_json_log_converts_the_samples_before_the_cut() {
    let dir = tempfile::tempdir().expect("dir");
    let text = std::fs::read_to_string(sample_log()).expect("sample");
    // Cut in the second sample's messages.
    let at = text.find("msg_b2").expect("second sample");
    let path = dir.path().join("cut.json");
    std::fs::write(&path, &text[..at]).expect("write");
    let (code, out, stderr) = convert(&[&path], Some("inspect"), &[]);
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(out.len(), 1);
    let second_line = text[..text
        .find("\"vault-pin\",\n      \"epoch\"")
        .expect("sample 2")]
        .lines()
        .count()
        - 1;
    assert!(
        stderr.contains(&format!("cut.json:{second_line}: error[")),
        "line {second_line}: {stderr}"
    );
    assert!(stderr.contains("truncated"), "{stderr}");
}

#[test]
fn a_log_from_stdin_converts_with_its_format_named() {
    let out = trajkit()
        .args(["convert", "--from", "inspect", "-"])
        .write_stdin(std::fs::read(sample_log()).expect("sample"))
        .output()
        .expect("runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(json_lines(&out.stdout).len(), 2);
}

/// A result whose call is missing is kept without a link (listed with its pointer); a sample
/// that cannot be read is rejected with its pointer.
#[test]
fn results_without_their_calls_are_kept_and_broken_samples_rejected_with_pointers() {
    let dir = tempfile::tempdir().expect("dir");
    let mut log = sample_log_value();
    // Sample 0 loses the assistant message that made call toolu_01.
    log["samples"][0]["messages"]
        .as_array_mut()
        .expect("messages")
        .remove(2);
    // Sample 1's last message gets an unknown role.
    log["samples"][1]["messages"][6]["role"] = json!("narrator");
    let path = dir.path().join("broken.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&log).expect("json")).expect("write");
    let (code, out, stderr) = convert(&[&path], Some("inspect"), &[]);
    assert_eq!(code, 1);
    assert_eq!(out.len(), 1, "{stderr}");
    let unlinked = &out[0]["details"]["inspect"]["unlinked_results"][0];
    assert_eq!(unlinked["pointer"], "/messages/2/tool_call_id");
    assert_eq!(unlinked["id"], "toolu_01");
    let step = unlinked["step"].as_u64().expect("step") as usize;
    assert!(out[0]["content"][step].get("tool_call_id").is_none());
    assert_eq!(validate_adp(&out), 0);
    assert!(stderr.contains("/samples/1/messages/6/role"), "{stderr}");
}

#[test]
fn a_duplicate_key_in_a_sample_is_diagnosed_at_its_place_in_the_log() {
    let dir = tempfile::tempdir().expect("dir");
    let text = std::fs::read_to_string(sample_log()).expect("sample");
    let text = text.replacen(
        "\"target\": \"picoCTF{p1n_0f_d00m}\",",
        "\"target\": \"x\", \"target\": \"y\",",
        1,
    );
    let path = dir.path().join("dup.json");
    std::fs::write(&path, text).expect("write");
    let (code, out, stderr) = convert(&[&path], Some("inspect"), &[]);
    assert_eq!((code, out.len()), (1, 1), "{stderr}");
    assert!(
        stderr.contains("error[json-duplicate-key]") && stderr.contains("/samples/1/target"),
        "{stderr}"
    );
}

#[test]
fn unanswered_calls_content_parts_and_legacy_fields_are_kept() {
    let dir = tempfile::tempdir().expect("dir");
    let mut log = sample_log_value();
    let s = &mut log["samples"][0];
    // The submit call's result is lost; the first answer uses the legacy `tool_error`.
    s["messages"].as_array_mut().expect("messages").pop();
    s["messages"][3]["tool_error"] = json!("exit status 1");
    // A user message with an image (as an attachment), an audio part, and a <think> block.
    s["messages"][1]["content"] = json!([
        {"type": "text", "text": "What is in the picture?"},
        {"type": "image", "image": "attachment://img1", "detail": "low"},
        {"type": "audio", "audio": "clip.mp3", "format": "mp3"}
    ]);
    s["attachments"] = json!({"img1": "data:image/png;base64,iVBORw0KGgo="});
    s["messages"][4]["content"] = json!("<think>Submit it.</think>Submitting.");
    s["scores"] =
        json!({"judge": {"value": {"accuracy": 1, "style": "P"}}, "match": {"value": "maybe"}});
    let path = dir.path().join("edited.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&log).expect("json")).expect("write");
    let (code, out, stderr) = convert(&[&path], Some("inspect"), &[]);
    assert_eq!(code, 0, "{stderr}");
    let t = &out[0];
    let c = t["content"].as_array().expect("content");
    assert_eq!(c[2]["class_"], "image_observation");
    assert_eq!(c[2]["content"], "data:image/png;base64,iVBORw0KGgo=");
    assert_eq!(
        c[4]["content"],
        "Remember to rotate the key.\nflag: picoCTF{b4s3_64_d3c0d3d}\n\n\nError: exit status 1"
    );
    let submit = &c[5];
    assert_eq!(submit["function"], "submit");
    assert!(submit.get("tool_call_id").is_none_or(Value::is_null));
    assert_eq!(
        (&submit["description"], &submit["reasoning_content"]),
        (&json!("Submitting."), &json!("Submit it."))
    );
    let inspect = &t["details"]["inspect"];
    assert_eq!(
        inspect["unanswered_calls"],
        json!([{"step": 5, "id": "toolu_02"}])
    );
    assert_eq!(inspect["tool_errors"][0]["type"], "unknown");
    let parts = inspect["part_fields"].as_array().expect("parts");
    assert!(parts
        .iter()
        .any(|p| p["pointer"] == "/messages/1/content/1" && p["fields"]["detail"] == "low"));
    assert!(parts
        .iter()
        .any(|p| p["pointer"] == "/messages/1/content/2" && p["value"]["type"] == "audio"));
    // A dict score has no reward; its numbers are components. "maybe" is no number.
    assert!(t["details"].get("reward").is_none());
    assert_eq!(
        t["details"]["reward_components"],
        json!({"judge/accuracy": 1.0, "judge/style": 0.5})
    );
    assert_eq!(t["details"]["outcome"]["status"], "unknown");
    assert_eq!(validate_adp(&out), 0);
}

/// Every tool call of the real logs becomes one tool action, every result is linked to its
/// call, and what converts validates and exports to every SFT target; a cut copy of the
/// archive converts its complete samples without a panic.
#[test]
fn real_logs_keep_every_tool_call() {
    let Some(logs) = agent_logs() else {
        return;
    };
    let dir = logs.join("inspect");
    let work = tempfile::tempdir().expect("dir");
    let files = files_in(&dir);
    assert_eq!(files.len(), 2);
    for file in &files {
        let samples = inspect_samples(file);
        let (code, out, stderr) = convert(&[file], None, &[]);
        assert!(
            stderr.contains("detected inspect"),
            "{}: {stderr}",
            file.display()
        );
        assert_eq!(
            tool_calls_in(&samples),
            tool_actions_linked(&out),
            "{}",
            file.display()
        );
        if file.extension().is_some_and(|e| e == "eval") {
            assert_eq!(code, 0, "{stderr}");
            assert_eq!(out.len(), samples.len());
            assert_eq!(
                out[0]["id"],
                "nnS4q9qsuCrCzsBcQLnBLA/dPiJifoWeEQBrfWsAopzWr/1/epoch-1"
            );
            assert_eq!(
                out[0]["details"]["inspect"]["log"]["eval"]["model"],
                "openai/gpt-4o-mini"
            );
            assert_eq!(validate_adp(&out), 0);
            exports_cleanly(work.path(), &out);
            // A cut copy: the complete samples convert, the cut is reported.
            let bytes = std::fs::read(file).expect("read");
            let cut = work.path().join("cut.eval");
            std::fs::write(&cut, &bytes[..bytes.len() * 2 / 3]).expect("write");
            let (code, partial, stderr) = convert(&[&cut], None, &[]);
            assert_eq!(code, 1, "{stderr}");
            assert!(!partial.is_empty() && partial.len() < out.len(), "{stderr}");
            assert!(stderr.contains("central directory"), "{stderr}");
            assert_eq!(validate_adp(&partial), 0);
        } else {
            // Its one sample holds tool results whose calls are not in the log (a fixture of
            // Inspect's error types): kept as observations without a link, listed with why.
            assert_eq!(code, 0, "{stderr}");
            assert_eq!(out.len(), 1);
            let unlinked = out[0]["details"]["inspect"]["unlinked_results"]
                .as_array()
                .expect("listed");
            assert_eq!(unlinked.len(), 11);
            assert_eq!(unlinked[0]["pointer"], "/messages/0/tool_call_id");
            assert_eq!(
                out[0]["details"]["inspect"]["tool_errors"][1]["type"],
                "timeout"
            );
            assert_eq!(validate_adp(&out), 0);
        }
    }
}

/// An archive re-zipped on Windows names its entries with backslashes: they are read as the
/// entries Inspect wrote. An entry named twice (a log written to twice) is read from its last
/// copy, as Inspect reads it, and the earlier copy is rejected naming it.
#[test]
fn backslash_and_duplicated_entries_are_read_or_rejected_never_skipped() {
    let dir = tempfile::tempdir().expect("dir");
    let entries = eval_entries(&sample_log_value());
    let (_, from_json, _) = convert(&[&sample_log()], None, &[]);
    let windows: Vec<(String, Vec<u8>)> = entries
        .iter()
        .map(|(n, d)| (n.replace('/', "\\"), d.clone()))
        .collect();
    let path = write_zip(dir.path(), "windows.eval", &windows, None);
    let (code, out, stderr) = convert(&[&path], Some("inspect"), &[]);
    assert_eq!((code, out.len()), (0, 2), "{stderr}");
    assert_eq!(out[1]["id"], from_json[1]["id"]);
    assert_eq!(out[1]["content"], from_json[1]["content"]);
    assert_eq!(
        out[1]["details"]["inspect"]["entry"],
        "samples/vault-pin_epoch_1.json"
    );

    // An earlier copy of the first sample, which is not JSON: it is not read.
    let mut twice = vec![(entries[1].0.clone(), b"not the sample".to_vec())];
    twice.extend(entries.iter().cloned());
    let path = write_zip(dir.path(), "twice.eval", &twice, None);
    let (code, out, stderr) = convert(&[&path], Some("inspect"), &[]);
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(out.len(), 2, "{stderr}");
    assert_eq!(out[0]["content"], from_json[0]["content"]);
    assert!(
        stderr.contains(&format!("twice.eval/{}", entries[1].0))
            && stderr.contains("2 entries named")
            && stderr.contains("this earlier copy (1 of 2) is not"),
        "{stderr}"
    );
}
