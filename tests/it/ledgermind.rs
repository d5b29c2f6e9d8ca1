//! LedgerMind event stores: sessions from JSON lines and from an `episodic.db` built here from
//! SQL (LedgerMind's own files may not be redistributed), reflections attached by citation,
//! corrupt databases and bad lines rejected while the rest converts.

use std::fs;
use std::path::Path;

use crate::common::{self, json_lines, sample_data, trajkit};
use serde_json::Value;

fn convert(inputs: &[&Path], extra: &[&str]) -> (i32, Vec<Value>, String) {
    let out = trajkit()
        .args(["convert", "--from", "ledgermind"])
        .args(extra)
        .args(inputs)
        .output()
        .expect("runs");
    (
        out.status.code().expect("exit code"),
        json_lines(&out.stdout),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn sample() -> std::path::PathBuf {
    sample_data().join("ledgermind/events.jsonl")
}

/// Builds an `episodic.db` holding the sample's events, in a shuffled row order (ids kept), so
/// ordering must come from timestamp then id.
fn build_db(path: &Path) {
    let conn = rusqlite::Connection::open(path).expect("create db");
    create_events(&conn);
    insert_events(&conn, &sample_events());
}

/// LedgerMind's `events` table.
fn create_events(conn: &rusqlite::Connection) {
    conn.execute_batch(
        "CREATE TABLE events (id INTEGER PRIMARY KEY AUTOINCREMENT, source TEXT, kind TEXT, \
         content TEXT, context TEXT, timestamp TEXT, status TEXT DEFAULT 'active', \
         linked_id TEXT, link_strength REAL);",
    )
    .expect("schema");
}

/// The sample's events, last first.
fn sample_events() -> Vec<Value> {
    let text = std::fs::read_to_string(sample()).expect("sample");
    let mut events: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    events.reverse();
    events
}

fn insert_events(conn: &rusqlite::Connection, events: &[Value]) {
    for e in events {
        conn.execute(
            "INSERT INTO events (id, source, kind, content, context, timestamp) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            rusqlite::params![
                e["id"].as_i64(),
                e["source"].as_str(),
                e["kind"].as_str(),
                e["content"].as_str(),
                e["context"].to_string(),
                e["timestamp"].as_str(),
            ],
        )
        .expect("insert");
    }
}

fn ids(out: &[Value]) -> Vec<&str> {
    out.iter().filter_map(|t| t["id"].as_str()).collect()
}

#[test]
fn json_lines_are_cut_into_sessions() {
    let (code, out, stderr) = convert(&[&sample()], &[]);
    assert_eq!(code, 0, "{stderr}");
    // Derived by hand from the fixture: two interleaved explicit sessions, then implicit ones
    // started by the first event and by a 90-minute gap (a `task` does not cut).
    assert_eq!(ids(&out), vec!["s-1", "s-2", "session-11", "session-14"]);
    let s1 = &out[0];
    assert_eq!(s1["content"][1]["class_"], "code_action");
    assert_eq!(s1["content"][1]["content"], "grep -rn timeout config/");
    assert_eq!(
        s1["content"][2]["tool_call_id"],
        s1["content"][1]["tool_call_id"]
    );
    assert_eq!(s1["content"][3]["function"], "edit_file");
    assert_eq!(s1["content"][5]["class_"], "message_action");
    assert_eq!(s1["details"]["outcome"]["status"], "success");
    let reflections = s1["details"]["reflections"]
        .as_array()
        .expect("reflections");
    assert_eq!(reflections.len(), 1);
    assert_eq!(reflections[0]["kind"], "reflection_summary");
    assert!(out[1]["details"].get("reflections").is_none());
    // The heartbeat is kept whole; a mapped event keeps everything but its content.
    let events = s1["details"]["ledgermind"]["events"]
        .as_array()
        .expect("events");
    let heartbeat = events
        .iter()
        .find(|e| e["kind"] == "heartbeat")
        .expect("kept");
    assert_eq!(heartbeat["content"], "alive");
    assert!(events[0].get("content").is_none());
    assert_eq!(events[0]["mapped"], true);
    assert_eq!(out[2]["details"]["outcome"]["status"], "failure");
    assert_eq!(out[2]["content"][2]["source"], "environment");
    trajkit()
        .args(["validate", "-q", "-"])
        .write_stdin(out.iter().map(|t| format!("{t}\n")).collect::<String>())
        .assert()
        .code(0);
}

#[test]
fn the_idle_gap_is_an_option() {
    let (_, out, _) = convert(&[&sample()], &["--idle-gap", "120"]);
    assert_eq!(ids(&out), vec!["s-1", "s-2", "session-11"]);
    assert_eq!(out[2]["content"].as_array().map(Vec::len), Some(5));
}

#[test]
fn a_sqlite_store_gives_the_same_trajectories_as_json_lines() {
    let dir = tempfile::tempdir().expect("dir");
    let db = dir.path().join("episodic.db");
    build_db(&db);
    let (code, from_db, stderr) = convert(&[&db], &[]);
    assert_eq!(code, 0, "{stderr}");
    let (_, from_jsonl, _) = convert(&[&sample()], &[]);
    assert_eq!(ids(&from_db), ids(&from_jsonl));
    for (a, b) in from_db.iter().zip(&from_jsonl) {
        assert_eq!(a["content"], b["content"]);
        assert_eq!(a["details"]["outcome"], b["details"]["outcome"]);
        assert_eq!(
            a["details"]["reflections"].as_array().map(Vec::len),
            b["details"]["reflections"].as_array().map(Vec::len)
        );
    }
    // Auto-detection recognizes the database by its header.
    let out = trajkit().arg("convert").arg(&db).output().expect("runs");
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stderr).contains("detected ledgermind"));
}

/// The names and bytes of the files in `dir`, sorted.
fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .expect("list")
        .map(|e| {
            let e = e.expect("entry");
            let bytes = std::fs::read(e.path()).expect("read");
            (e.file_name().to_string_lossy().into_owned(), bytes)
        })
        .collect();
    files.sort();
    files
}

/// Converts the store in `dir`, checks that it gives the sample's trajectories, and that no
/// file of `dir` was changed, added or removed.
fn assert_reads_everything_untouched(dir: &Path, expected: &[Value]) {
    let before = snapshot(dir);
    let (code, out, stderr) = convert(&[&dir.join("episodic.db")], &[]);
    assert_eq!(code, 0, "{}: {stderr}", dir.display());
    assert_eq!(ids(&out), ids(expected), "{}", dir.display());
    for (a, b) in out.iter().zip(expected) {
        assert_eq!(a["content"], b["content"], "{}", dir.display());
    }
    let after = snapshot(dir);
    let names = |s: &[(String, Vec<u8>)]| s.iter().map(|f| f.0.clone()).collect::<Vec<_>>();
    assert_eq!(names(&after), names(&before), "{}", dir.display());
    for (a, b) in after.iter().zip(&before) {
        assert!(a.1 == b.1, "{}: {} changed", dir.display(), a.0);
    }
}

#[test]
fn rows_still_in_the_write_ahead_log_are_read_and_the_store_is_not_touched() {
    let dir = tempfile::tempdir().expect("dir");
    let live = dir.path().join("live");
    std::fs::create_dir(&live).expect("mkdir");
    let db = live.join("episodic.db");
    let writer = rusqlite::Connection::open(&db).expect("create db");
    writer
        .pragma_update(None, "journal_mode", "WAL")
        .expect("wal");
    create_events(&writer);
    let events = sample_events();
    let (early, late) = events.split_at(9);
    insert_events(&writer, early);
    // The first rows go to the database file; the rest stay in the log while the writer is
    // open.
    writer
        .pragma_update(None, "wal_checkpoint", "TRUNCATE")
        .expect("checkpoint");
    writer
        .pragma_update(None, "wal_autocheckpoint", 0)
        .expect("no autocheckpoint");
    insert_events(&writer, late);
    let wal = live.join("episodic.db-wal");
    assert!(std::fs::metadata(&wal).expect("wal").len() > 0);
    let (_, expected, _) = convert(&[&sample()], &[]);
    assert_eq!(expected.len(), 4);
    // A live store: the writer is open, its -shm up to date.
    assert_reads_everything_untouched(&live, &expected);
    // The files of a writer that is gone without a checkpoint, with and without the -shm.
    for (name, files) in [
        (
            "copy",
            &["episodic.db", "episodic.db-wal", "episodic.db-shm"][..],
        ),
        ("no-shm", &["episodic.db", "episodic.db-wal"][..]),
    ] {
        let copy = dir.path().join(name);
        std::fs::create_dir(&copy).expect("mkdir");
        for f in files {
            std::fs::copy(live.join(f), copy.join(f)).expect("copy");
        }
        assert_reads_everything_untouched(&copy, &expected);
    }
    // Still live: the reader never checkpointed the log away.
    assert!(std::fs::metadata(&wal).expect("wal").len() > 0);
    let rows: i64 = writer
        .query_row("SELECT count(*) FROM events", [], |r| r.get(0))
        .expect("count");
    assert_eq!(rows, 15);
}

#[test]
fn a_corrupt_database_is_rejected_and_other_inputs_still_convert() {
    let dir = tempfile::tempdir().expect("dir");
    let db = dir.path().join("episodic.db");
    let mut bytes = b"SQLite format 3\0".to_vec();
    bytes.extend_from_slice(&[0xAB; 4096]);
    std::fs::write(&db, bytes).expect("write");
    let rejects = dir.path().join("rejects.jsonl");
    let rejects_arg = rejects.to_string_lossy().into_owned();
    let (code, out, stderr) = convert(&[&db, &sample()], &["--rejects", &rejects_arg]);
    assert_eq!(code, 1);
    assert_eq!(out.len(), 4, "{stderr}");
    assert!(
        stderr.contains("episodic.db:1: error[read-error]"),
        "{stderr}"
    );
    assert!(
        stderr.contains("cannot read the SQLite events table"),
        "{stderr}"
    );
    assert_eq!(
        json_lines(&std::fs::read(&rejects).expect("rejects")).len(),
        1
    );
}

#[test]
fn a_line_that_is_not_an_object_is_rejected_with_its_line() {
    let dir = tempfile::tempdir().expect("dir");
    let input = dir.path().join("events.jsonl");
    let mut text = std::fs::read_to_string(sample()).expect("sample");
    text.push_str("[\"not\", \"an event\"]\n{broken\n{\"source\": \"user\", \"kind\": \"prompt\", \"content\": \"hi\"}\n");
    std::fs::write(&input, text).expect("write");
    let (code, out, stderr) = convert(&[&input], &[]);
    assert_eq!(code, 1);
    assert_eq!(out.len(), 4);
    assert!(
        stderr.contains("events.jsonl:16: error[invalid-record]"),
        "{stderr}"
    );
    assert!(
        stderr.contains("events.jsonl:17: error[json-syntax]"),
        "{stderr}"
    );
}

/// Events of sessions of their own between the first and the last events of session `far`:
/// more than two of the reader's batches (16,384 lines), so `far` is read back across them.
const NEAR: usize = 40_000;
/// The line of the bad event of [`spread_store`].
const BAD_LINE: usize = NEAR + 2;

/// Events of session `far`: a prompt, then [`NEAR`] events of sessions of their own (about 6
/// MB), then a bad event (line [`BAD_LINE`]), a call and its result.
fn spread_store() -> String {
    let event = |id: usize, kind: &str, session: &str, content: &str| {
        format!(
            "{{\"id\": {id}, \"source\": \"agent\", \"kind\": \"{kind}\", \"content\": \"{content}\", \
             \"context\": {{\"session_id\": \"{session}\", \"tool\": \"bash\"}}, \
             \"timestamp\": \"2026-03-04T10:{:02}:{:02}\"}}\n",
            (id / 60) % 60,
            id % 60
        )
    };
    let mut text = event(1, "prompt", "far", "start");
    for i in 2..BAD_LINE {
        text.push_str(&event(i, "prompt", &format!("near-{i}"), &"x".repeat(100)));
    }
    // Valid JSON, but `kind` must be a string: rejected at its line, not part of `far`.
    text.push_str(&format!(
        "{{\"id\": {BAD_LINE}, \"source\": \"agent\", \"kind\": 7, \"content\": \"bad\", \
         \"context\": {{\"session_id\": \"far\"}}, \"timestamp\": \"2026-03-04T11:00:00\"}}\n",
    ));
    text.push_str(&event(BAD_LINE + 1, "call", "far", "ls"));
    // A duplicate key: valid for the schema, but rejected at its line (`json-duplicate-key`)
    // rather than read with its last value.
    text.push_str(&format!(
        "{{\"id\": {}, \"source\": \"tool\", \"kind\": \"result\", \"content\": \"first\", \
         \"content\": \"listing\", \"context\": {{\"session_id\": \"far\"}}, \
         \"timestamp\": \"2026-03-04T11:00:02\"}}\n",
        BAD_LINE + 2
    ));
    text
}

#[test]
fn events_read_back_from_the_file_keep_their_session_and_a_bad_one_its_line() {
    let dir = tempfile::tempdir().expect("dir");
    let input = dir.path().join("events.jsonl");
    std::fs::write(&input, spread_store()).expect("write");
    let (code, out, stderr) = convert(&[&input], &[]);
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(out.len(), NEAR + 1);
    assert!(
        stderr.contains(&format!("events.jsonl:{BAD_LINE}: error[invalid-record]")),
        "{stderr}"
    );
    assert!(stderr.contains("/kind"), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "events.jsonl:{}: error[json-duplicate-key] /content: duplicate key \"content\"",
            BAD_LINE + 2
        )),
        "{stderr}"
    );
    let far = out.iter().find(|t| t["id"] == "far").expect("far");
    assert_eq!(
        far["details"]["source"]["native_ids"]["event_ids"],
        serde_json::json!([1, BAD_LINE + 1])
    );
    assert_eq!(far["content"][0]["content"], "start");
    assert_eq!(far["content"][1]["class_"], "api_action");
    assert_eq!(far["content"][1]["kwargs"]["input"], "ls");
    assert!(!far.to_string().contains("listing"));
    let near = out.iter().find(|t| t["id"] == "near-2").expect("near-2");
    assert_eq!(near["content"][0]["content"], "x".repeat(100));
}

#[test]
fn compressed_and_piped_stores_convert_as_the_file_does() {
    use std::io::Write;
    let dir = tempfile::tempdir().expect("dir");
    let plain = dir.path().join("events.jsonl");
    let text = spread_store();
    std::fs::write(&plain, &text).expect("write");
    let gz = dir.path().join("events.jsonl.gz");
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(text.as_bytes()).expect("gzip");
    std::fs::write(&gz, enc.finish().expect("gzip")).expect("write");
    let run = |cmd: &mut assert_cmd::Command| {
        let out = cmd.output().expect("runs");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
            out.stdout,
        )
    };
    let args = ["convert", "--from", "ledgermind"];
    let (code, stderr, from_plain) = run(trajkit().args(args).arg(&plain));
    assert_eq!(code, Some(1), "{stderr}");
    let (code, stderr, from_gz) = run(trajkit().args(args).arg(&gz));
    assert_eq!(code, Some(1));
    assert!(
        stderr.contains(&format!(
            "events.jsonl.gz:{BAD_LINE}: error[invalid-record]"
        )),
        "{stderr}"
    );
    let (code, stderr, from_stdin) = run(trajkit().args(args).arg("-").write_stdin(text));
    assert_eq!(code, Some(1));
    assert!(
        stderr.contains(&format!("-:{BAD_LINE}: error[invalid-record]")),
        "{stderr}"
    );
    // The same trajectories; only the file named in `details.source` differs.
    let lines = |out: &[u8], file: &str| {
        String::from_utf8_lossy(out).replace(&format!("\"file\":{}", serde_json::json!(file)), "")
    };
    let expected = lines(&from_plain, &plain.to_string_lossy());
    assert_eq!(expected.lines().count(), NEAR + 1);
    assert_eq!(lines(&from_gz, &gz.to_string_lossy()), expected);
    assert_eq!(lines(&from_stdin, "-"), expected);
}

#[test]
fn cutting_at_prompts_is_an_option() {
    let dir = tempfile::tempdir().expect("dir");
    let store = dir.path().join("events.jsonl");
    let event = |id: u32, kind: &str, content: &str, second: u32| {
        format!(
            "{{\"id\": {id}, \"source\": \"user\", \"kind\": \"{kind}\", \"content\": \"{content}\", \
             \"context\": {{}}, \"timestamp\": \"2026-03-04T10:00:{second:02}\"}}\n"
        )
    };
    let text = [
        event(1, "prompt", "first question", 0),
        event(2, "result", "first answer", 10),
        event(3, "prompt", "follow-up", 20),
        event(4, "result", "second answer", 30),
    ]
    .concat();
    std::fs::write(&store, text).expect("write store");
    let (code, out, stderr) = convert(&[&store], &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(ids(&out), vec!["session-1", "session-3"]);
    let (code, out, stderr) = convert(&[&store], &["--ledgermind-cut-at-prompt", "false"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(ids(&out), vec!["session-1"]);
    let texts: Vec<&str> = out[0]["content"]
        .as_array()
        .expect("steps")
        .iter()
        .filter_map(|s| s["content"].as_str())
        .collect();
    assert_eq!(
        texts,
        [
            "first question",
            "first answer",
            "follow-up",
            "second answer"
        ]
    );
}

/// The sessions of a store do not depend on whether its lines come in time order: a store in
/// order but for one late line after more than a batch (16,384 lines) converts as the same
/// store sorted, the late line in the implicit session it falls in.
#[test]
fn a_store_out_of_time_order_gives_the_sessions_of_the_sorted_store() {
    let event = |id: usize, kind: &str, second: usize| {
        format!(
            "{{\"id\": {id}, \"source\": \"agent\", \"kind\": \"{kind}\", \"content\": \"c{id}\", \
             \"context\": {{}}, \"timestamp\": \"2026-03-{:02}T{:02}:{:02}:{:02}\"}}\n",
            1 + second / 86_400,
            (second / 3600) % 24,
            (second / 60) % 60,
            second % 60
        )
    };
    // Implicit sessions of two events each (a prompt, which starts one, and its result a
    // minute later), then a result 30 s after the first session's, which belongs to it but
    // comes last.
    let mut events: Vec<(usize, String)> = (0..20_000)
        .map(|i| {
            let kind = if i % 2 == 0 { "prompt" } else { "result" };
            (60 * i, event(i + 1, kind, 60 * i))
        })
        .collect();
    events.push((90, event(20_001, "result", 90)));
    let dir = tempfile::tempdir().expect("dir");
    let late = dir.path().join("late.jsonl");
    let text =
        |events: &[(usize, String)]| events.iter().map(|(_, l)| l.as_str()).collect::<String>();
    std::fs::write(&late, text(&events)).expect("write");
    events.sort_by_key(|(second, _)| *second);
    let sorted = dir.path().join("sorted.jsonl");
    std::fs::write(&sorted, text(&events)).expect("write");
    let (code, from_late, stderr) = convert(&[&late], &[]);
    assert_eq!(code, 0, "{stderr}");
    let (code, from_sorted, stderr) = convert(&[&sorted], &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(from_late.len(), 10_000);
    // The same trajectories; only the lines in `details.source` differ.
    let without_source = |out: &[Value]| -> Vec<Value> {
        out.iter()
            .map(|t| {
                let mut t = t.clone();
                if let Some(d) = t["details"].as_object_mut() {
                    d.remove("source");
                }
                t
            })
            .collect()
    };
    assert_eq!(without_source(&from_late), without_source(&from_sorted));
    assert_eq!(from_late[0]["id"], "session-1");
    assert_eq!(
        from_late[0]["details"]["source"]["native_ids"]["event_ids"],
        serde_json::json!([1, 2, 20_001])
    );
}

#[test]
fn semantic_events_without_any_session_are_rejected_not_dropped() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("events.jsonl");
    std::fs::write(
        &path,
        "{\"id\": 10, \"source\": \"agent\", \"kind\": \"reflection_summary\", \"content\": \"Grep first.\", \"context\": {\"event_ids\": [3]}, \"timestamp\": \"2026-03-04T10:05:00\"}\n",
    )
    .expect("write");
    let (code, out, stderr) = convert(&[&path], &[]);
    assert_eq!(code, 1, "{stderr}");
    assert!(out.is_empty());
    assert!(
        stderr.contains("events.jsonl:1:") && stderr.contains("no session to attach them to"),
        "{stderr}"
    );
}

/// Events exported without the store's row ids get stable ids from their lines: two calls and
/// their results in one session keep distinct links, and the trajectory validates.
#[test]
fn events_without_ids_are_known_by_their_lines() {
    let dir = tempfile::tempdir().expect("tmp");
    let events = dir.path().join("events.jsonl");
    let lines: Vec<String> = sample_events()
        .into_iter()
        .map(|mut e| {
            e.as_object_mut().map(|o| o.remove("id"));
            e.to_string()
        })
        .collect();
    fs::write(&events, lines.join("\n") + "\n").expect("events");
    let (code, out, err) = convert(&[&events], &[]);
    assert_eq!(code, 0, "{err}");
    let mut got = ids(&out);
    assert_eq!(got.len(), convert(&[&sample()], &[]).1.len());
    got.sort_unstable();
    got.dedup();
    assert_eq!(got.len(), out.len(), "unique ids");
    let mut calls = 0;
    for t in &out {
        let links: Vec<&str> = t["content"]
            .as_array()
            .expect("content")
            .iter()
            .filter(|s| s["class_"] == "api_action" || s["class_"] == "code_action")
            .filter_map(|s| s["tool_call_id"].as_str())
            .collect();
        assert!(
            links.iter().all(|l| l.starts_with("event-line-")),
            "{links:?}"
        );
        calls += links.len();
        let event_ids = &t["details"]["source"]["native_ids"]["event_ids"];
        assert!(
            event_ids
                .as_array()
                .expect("ids")
                .iter()
                .all(|i| i.as_str().is_some_and(|s| s.starts_with("line-"))),
            "{event_ids}"
        );
    }
    assert!(calls >= 2, "{calls} linked calls");
    assert_eq!(common::validate_adp(&out), 0);
}
