//! Writes a large JSON-lines file for benchmarks, from real record shapes.
//!
//! Usage: `cargo run --release --example gen_bench_input -- OUT.jsonl [BYTES] [SHAPES_DIR]`
//! or `... -- OUT_DIR BYTES SHAPES_DIR sessions` (agent sessions, a file each, below),
//! or `... -- OUT.db BYTES SHAPE.db store` (a Crush, Goose or Hermes SQLite store, at the end).
//!
//! The shapes are the records (JSON objects) of every `*.json` or `*.jsonl` file in `SHAPES_DIR`,
//! recursively. Without `SHAPES_DIR`, they are the ADP trajectories (an `id` and a `content`
//! list of `class_`-tagged steps) of `../shared/corpus/adp`, falling back to `sample_data/adp`.
//! They are written in turn, each made unique (`<trajectory_id>-<n>`, Reflexion iteration `n`,
//! or `<id>#<n>`), until the output reaches BYTES (default 1 GiB). The output is deterministic.
//!
//! With `sessions`, each file of `SHAPES_DIR` is one agent session (Codex, Claude Code, Pi, Droid,
//! Kimi CLI, Qwen Code or Gemini CLI JSON lines; a Gemini CLI, mini-swe-agent, Inspect AI or ATIF document; an
//! Inspect AI `.eval` archive;
//! an Aider chat history, whose sessions repeat), and `OUT_DIR` gets files `session-<n><extension>` of about 1 MB
//! until BYTES. A JSON-lines session keeps its first line and repeats the others; a document
//! keeps the first and last items of its `messages`, `samples` or `steps` and repeats those
//! between (ATIF `step_id`s renumbered); an archive keeps its header and repeats its samples.
//! Repeat `k` makes message, line and call ids `<id>-<k>` (so each result still answers its
//! own call, and a Claude Code, Qwen Code or Pi repeat hangs off the previous one); file `n` makes session
//! and run ids `<id>-<n>`.

use std::fs;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use serde_json::Value;

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok()).map(|e| e.path()).collect();
    paths.sort();
    for p in paths {
        if p.is_dir() {
            collect(&p, out);
        } else if p
            .extension()
            .is_some_and(|e| e == "json" || e == "jsonl" || e == "eval")
            || p.to_string_lossy().ends_with(".aider.chat.history.md")
        {
            out.push(p);
        }
    }
}

fn shapes(dir: &Path, keep: fn(&Value) -> bool) -> Vec<Value> {
    let mut files = Vec::new();
    collect(dir, &mut files);
    let mut records = Vec::new();
    for f in files {
        let Ok(text) = fs::read_to_string(&f) else {
            continue;
        };
        match serde_json::from_str::<Value>(&text) {
            Ok(Value::Array(items)) => records.extend(items),
            Ok(v @ Value::Object(_)) => records.push(v),
            _ => records.extend(text.lines().filter_map(|l| serde_json::from_str(l).ok())),
        }
    }
    records.retain(keep);
    records
}

fn is_trajectory(r: &Value) -> bool {
    let adp = r["id"].is_string()
        && r["content"]
            .as_array()
            .is_some_and(|steps| steps.iter().all(|s| s["class_"].is_string()));
    adp || r["trajectory_id"].is_string() || r["loop_id"].is_string()
}

/// Any JSON object: a shapes directory given on the command line holds only the records wanted.
fn is_object(r: &Value) -> bool {
    r.is_object()
}

/// Makes copy `n` of a shape, written in round `round` over the shapes, unique by its format's
/// key (a step record's `episode_id` per round, so that each round's episodes group apart). LedgerMind events (a `kind` and a `timestamp`) keep their sessions: every event of a
/// round gets the round's session ids (`<session_id>-<round>`), an integer id shifted by a
/// million per round (and so do the integer ids its `context.event_ids` cites, so a round's
/// reflections attach to that round's sessions), and a timestamp shifted by `round` days, so
/// implicit sessions stay apart.
fn uniquify(r: &mut Value, n: u64, round: u64) {
    if r["kind"].is_string() && r["timestamp"].is_string() {
        let shift = |id: &Value| id.as_u64().map(|id| Value::from(id + round * 1_000_000));
        if let Some(session) = r["context"]["session_id"].as_str().map(str::to_owned) {
            r["context"]["session_id"] = Value::String(format!("{session}-{round}"));
        }
        if let Some(id) = shift(&r["id"]) {
            r["id"] = id;
        }
        let cited = r
            .pointer_mut("/context/event_ids")
            .and_then(Value::as_array_mut);
        if let Some(cited) = cited {
            for id in cited.iter_mut() {
                if let Some(shifted) = shift(id) {
                    *id = shifted;
                }
            }
        }
        let ts = r["timestamp"].as_str().unwrap_or_default();
        if let Ok(t) = chrono::NaiveDateTime::parse_from_str(ts, "%Y-%m-%dT%H:%M:%S") {
            let shifted = t + chrono::Duration::days(round as i64);
            r["timestamp"] = Value::String(shifted.format("%Y-%m-%dT%H:%M:%S").to_string());
        }
    } else if let Some(id) = r["trajectory_id"].as_str().map(str::to_owned) {
        r["trajectory_id"] = Value::String(format!("{id}-{n}"));
    } else if r["loop_id"].is_string() {
        r["iteration"] = Value::from(n);
    } else if let Some(episode) = r["episode_id"].as_str().map(str::to_owned) {
        // A step of an episode (records grouped by a spec): the round's copy of the episode.
        r["episode_id"] = Value::String(format!("{episode}-{round}"));
    } else {
        let id = r["id"].as_str().unwrap_or("t").to_owned();
        r["id"] = Value::String(format!("{id}#{n}"));
    }
}

/// Keys whose string values name a session or run: made unique per output file (`<v>-<n>`),
/// wherever they stand.
const FILE_KEYS: &[&str] = &[
    "sessionId",
    "session_id",
    "instance_id",
    "run_id",
    "eval_id",
];

/// Keys whose values name a message, line, call or result: made unique per repeat `k` of the
/// repeated part (`<v>-<k>`, or a number plus `k` million), wherever they stand, so that every
/// result still answers its own call.
const REPEAT_KEYS: &[&str] = &[
    "id",
    "uuid",
    "parentUuid",
    "parentId",
    "call_id",
    "toolCallId",
    "callId",
    "tool_call_id",
    "tool_use_id",
    "source_call_id",
    "source_line_id",
    "source_message_id",
];

/// Rewrites the values of `keys` in `v`, recursively, with `rename`.
fn rename_keys(v: &mut Value, keys: &[&str], rename: &dyn Fn(&Value) -> Option<Value>) {
    match v {
        Value::Object(o) => {
            for (k, child) in o.iter_mut() {
                if keys.contains(&k.as_str()) {
                    if let Some(new) = rename(child) {
                        *child = new;
                        continue;
                    }
                }
                rename_keys(child, keys, rename);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|i| rename_keys(i, keys, rename)),
        _ => {}
    }
}

/// `<v>-<k>` of a string, `v + k * 1,000,000` of a number.
fn suffixed(v: &Value, k: u64) -> Option<Value> {
    match v {
        Value::String(s) => Some(Value::String(format!("{s}-{k}"))),
        Value::Number(n) => n.as_u64().map(|n| Value::from(n + k * 1_000_000)),
        _ => None,
    }
}

/// A session file: its lines (JSON lines), its one document, whose main list (`messages`,
/// `samples` or `steps`) is what grows, or an Inspect AI `.eval` archive: its header and its
/// samples, which grow.
enum Session {
    Lines(Vec<Value>),
    Document(Value, &'static str),
    Eval(Value, Vec<Value>),
    /// An Aider chat history (Markdown): its sessions repeat.
    Markdown(String),
}

impl Session {
    fn read(path: &Path) -> Option<Session> {
        if path.extension().is_some_and(|e| e == "eval") {
            return read_eval(path);
        }
        let text = fs::read_to_string(path).ok()?;
        if path.to_string_lossy().ends_with(".aider.chat.history.md") {
            return Some(Session::Markdown(text));
        }
        if let Ok(doc) = serde_json::from_str::<Value>(&text) {
            let list = ["messages", "samples", "steps"]
                .into_iter()
                .find(|k| doc[*k].as_array().is_some_and(|a| !a.is_empty()))?;
            return Some(Session::Document(doc, list));
        }
        let lines: Vec<Value> = text
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        (lines.len() > 1).then_some(Session::Lines(lines))
    }
}

/// The header and samples of an Inspect AI `.eval` archive.
fn read_eval(path: &Path) -> Option<Session> {
    let mut zip = zip::ZipArchive::new(fs::File::open(path).ok()?).ok()?;
    let mut names: Vec<String> = zip
        .file_names()
        .filter_map(|n| Some(n.ok()?.into_owned()))
        .filter(|n| n.starts_with("samples/") && n.ends_with(".json"))
        .collect();
    names.sort();
    let mut entry = |name: &str| -> Option<Value> {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut zip.by_name(name).ok()?, &mut text).ok()?;
        serde_json::from_str(&text).ok()
    };
    let header = entry("header.json")?;
    let samples: Vec<Value> = names.iter().filter_map(|n| entry(n)).collect();
    (!samples.is_empty()).then_some(Session::Eval(header, samples))
}

/// An `.eval` archive of `header` and `samples` (stored, as Inspect AI writes small logs
/// compressed; the reader's cost is the same per byte of JSON).
fn write_eval(header: &Value, samples: &[Value]) -> Result<Vec<u8>, Box<dyn std::error::Error>> {
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    zip.start_file("header.json", options)?;
    serde_json::to_writer(&mut zip, header)?;
    for s in samples {
        let name = |k: &str| match &s[k] {
            Value::String(v) => v.clone(),
            v => v.to_string(),
        };
        zip.start_file(
            format!("samples/{}_epoch_{}.json", name("id"), name("epoch")),
            options,
        )?;
        serde_json::to_writer(&mut zip, s)?;
    }
    Ok(zip.finish()?.into_inner())
}

/// Writes session files shaped like the files of `shapes` into `out` (see the module doc).
fn sessions(out: &Path, target: u64, shapes: &Path) -> Result<(), Box<dyn std::error::Error>> {
    const FILE_BYTES: usize = 1 << 20;
    let mut files = Vec::new();
    collect(shapes, &mut files);
    let shapes: Vec<(Session, String)> = files
        .iter()
        .filter_map(|f| {
            let name = f.file_name()?.to_str()?;
            let ext = &name[name.find('.')?..];
            Some((Session::read(f)?, ext.to_owned()))
        })
        .collect();
    if shapes.is_empty() {
        return Err("no session shapes found".into());
    }
    fs::create_dir_all(out)?;
    let (mut written, mut n) = (0u64, 0u64);
    while written < target {
        let (shape, ext) = &shapes[(n % shapes.len() as u64) as usize];
        let per_file = |v: &mut Value| rename_keys(v, FILE_KEYS, &|v| suffixed(v, n));
        let repeat = |v: &Value, k: u64| {
            let mut v = v.clone();
            rename_keys(&mut v, REPEAT_KEYS, &|v| suffixed(v, k));
            per_file(&mut v);
            v
        };
        let mut bytes = Vec::with_capacity(FILE_BYTES + (64 << 10));
        match shape {
            Session::Lines(lines) => {
                let mut head = lines[0].clone();
                per_file(&mut head);
                if let Some(id) = head.pointer_mut("/payload/id") {
                    *id = suffixed(id, n).unwrap_or(Value::Null);
                }
                if head["type"] == "session" || head["type"] == "session_start" {
                    // A Pi or Droid session header: its id is the session's.
                    head["id"] = suffixed(&head["id"], n).unwrap_or(Value::Null);
                }
                serde_json::to_writer(&mut bytes, &head)?;
                bytes.push(b'\n');
                let mut known: std::collections::HashSet<String> = head["uuid"]
                    .as_str()
                    .map(str::to_owned)
                    .into_iter()
                    .collect();
                let mut last_uuid = head.get("uuid").cloned().unwrap_or(Value::Null);
                for k in 0.. {
                    if bytes.len() >= FILE_BYTES {
                        break;
                    }
                    let before = last_uuid.clone();
                    for line in &lines[1..] {
                        let mut v = repeat(line, k);
                        // Claude Code and Qwen Code link lines by `uuid`/`parentUuid`, Pi by
                        // `id`/`parentId`.
                        let (id_key, parent_key) = match v.get("parentId") {
                            Some(_) => ("id", "parentId"),
                            None => ("uuid", "parentUuid"),
                        };
                        // A line whose parent is in no earlier line (a repeat's root) hangs off
                        // the previous repeat's last line: the file stays one conversation.
                        let orphan = match &v[parent_key] {
                            Value::Null => k > 0 && v.get(parent_key).is_some(),
                            Value::String(p) => !known.contains(p),
                            _ => false,
                        };
                        if orphan {
                            v[parent_key] = before.clone();
                        }
                        if let Some(u) = v[id_key].as_str() {
                            known.insert(u.to_owned());
                            last_uuid = v[id_key].clone();
                        }
                        serde_json::to_writer(&mut bytes, &v)?;
                        bytes.push(b'\n');
                    }
                }
            }
            Session::Document(doc, list) => {
                let items = doc[*list].as_array().cloned().unwrap_or_default();
                // The first and last items stay in place (a system prompt, a closing message);
                // the ones between repeat.
                let (first, middle, last) = match items.as_slice() {
                    [a, middle @ .., z] if !middle.is_empty() => {
                        (vec![a.clone()], middle, vec![z.clone()])
                    }
                    all => (Vec::new(), all, Vec::new()),
                };
                let one = serde_json::to_vec(&Value::Array(middle.to_vec()))?
                    .len()
                    .max(1);
                let repeats = (FILE_BYTES / one).max(1) as u64;
                let mut grown = first;
                for k in 0..repeats {
                    grown.extend(middle.iter().map(|i| repeat(i, k)));
                }
                grown.extend(last.into_iter().map(|i| repeat(&i, repeats)));
                let mut step = 0u64;
                for item in &mut grown {
                    if item.get("step_id").is_some_and(Value::is_u64) {
                        step += 1;
                        item["step_id"] = Value::from(step);
                    }
                }
                let mut doc = doc.clone();
                doc[*list] = Value::Array(grown);
                per_file(&mut doc);
                serde_json::to_writer(&mut bytes, &doc)?;
            }
            Session::Markdown(text) => {
                // Each repeat's session headers get `-<n>.<k>` after their time, so that every
                // session keeps an id of its own.
                for k in 0..(FILE_BYTES / text.len().max(1)).max(1) as u64 {
                    for line in text.split_inclusive('\n') {
                        if line.starts_with("# aider chat started at ") {
                            bytes.extend_from_slice(line.trim_end().as_bytes());
                            bytes.extend_from_slice(format!("-{n}.{k}\n").as_bytes());
                        } else {
                            bytes.extend_from_slice(line.as_bytes());
                        }
                    }
                }
            }
            Session::Eval(header, samples) => {
                let one = serde_json::to_vec(samples)?.len().max(1);
                let mut grown = Vec::new();
                for k in 0..(FILE_BYTES / one).max(1) as u64 {
                    grown.extend(samples.iter().map(|s| repeat(s, k)));
                }
                let mut header = header.clone();
                per_file(&mut header);
                bytes = write_eval(&header, &grown)?;
            }
        }
        fs::write(out.join(format!("session-{n:06}{ext}")), &bytes)?;
        written += bytes.len() as u64;
        n += 1;
    }
    eprintln!(
        "wrote {n} sessions ({written} bytes) from {} shapes to {}",
        shapes.len(),
        out.display()
    );
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [out, bytes, shapes, mode] = args.as_slice() {
        if mode == "sessions" {
            return sessions(Path::new(out), bytes.parse()?, Path::new(shapes));
        }
        if mode == "store" {
            return store(Path::new(out), bytes.parse()?, Path::new(shapes));
        }
        return Err(format!("unknown mode {mode:?} (known: sessions, store)").into());
    }
    let out_path = args
        .first()
        .ok_or("usage: gen_bench_input OUT.jsonl [BYTES] [SHAPES_DIR]")?;
    let target: u64 = args.get(1).map_or(Ok(1 << 30), |s| s.parse())?;
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut records = match args.get(2) {
        Some(dir) => shapes(&PathBuf::from(dir), is_object),
        None => shapes(&root.join("../shared/corpus/adp"), is_trajectory),
    };
    if records.is_empty() {
        records = shapes(&root.join("sample_data/adp"), is_trajectory);
    }
    if records.is_empty() {
        return Err("no trajectory shapes found".into());
    }
    let mut out = BufWriter::with_capacity(1 << 20, fs::File::create(out_path)?);
    let mut written = 0u64;
    let mut n = 0u64;
    while written < target {
        let mut r = records[(n % records.len() as u64) as usize].clone();
        uniquify(&mut r, n, n / records.len() as u64);
        let line = serde_json::to_vec(&r)?;
        out.write_all(&line)?;
        out.write_all(b"\n")?;
        written += line.len() as u64 + 1;
        n += 1;
    }
    out.flush()?;
    eprintln!(
        "wrote {n} trajectories ({written} bytes) from {} shapes to {out_path}",
        records.len()
    );
    Ok(())
}

/// With `store`: a SQLite store of an agent at `out` of about `target` bytes, with the schema
/// of the store `shape` (its tables and indexes; not full-text indexes nor triggers) and its
/// sessions repeated: Crush's or the Go OpenCode's `crush.db`, OpenCode's `opencode.db` (1.2
/// on: `session`, `message`, `part`), Goose's `sessions.db`, or
/// Hermes' `state.db`, which may be given as `hermes sessions export` lines (`.jsonl`, made
/// into a store of schema 30's columns first). Tables without a `session_id` column (schema
/// versions, shared prompts) are copied once; `sessions` and the tables with a `session_id`
/// are copied again and again: repeat `n` suffixes session, message and file ids with `-n` (a
/// parent's id and a summary message's alike), lets SQLite number integer ids, and varies the
/// prose: in every text with a space (in JSON columns, every such string, and the JSON a
/// string holds), words of four letters or more have their letters shifted by a key of the
/// repeat and the word, so no text repeats; names, types, roles and ids are kept.
fn store(out: &Path, target: u64, shape: &Path) -> Result<(), Box<dyn std::error::Error>> {
    use rusqlite::types::Value as Sql;
    use rusqlite::Connection;
    let _ = fs::remove_file(out);
    let made = out.with_extension("shape.db");
    let shape = if shape.extension().is_some_and(|e| e == "jsonl") {
        hermes_shape(shape, &made)?;
        made.as_path()
    } else {
        shape
    };
    let mut to = Connection::open(out)?;
    to.execute_batch("PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;")?;
    to.execute(
        "ATTACH DATABASE ?1 AS shape",
        [format!("file:{}?immutable=1", shape.display())],
    )?;
    let virtual_tables: Vec<String> = to
        .prepare("SELECT name FROM shape.sqlite_master WHERE sql LIKE 'CREATE VIRTUAL TABLE%'")?
        .query_map([], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    let skipped = |name: &str| {
        name.starts_with("sqlite_")
            || virtual_tables
                .iter()
                .any(|v| name == v || name.starts_with(&format!("{v}_")))
    };
    let schema: Vec<(String, String, String)> = to
        .prepare(
            "SELECT type, name, sql FROM shape.sqlite_master WHERE sql IS NOT NULL \
             AND type IN ('table', 'index') ORDER BY rowid",
        )?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<Result<_, _>>()?;
    let mut tables = Vec::new();
    for (kind, name, sql) in &schema {
        let table: String = if kind == "index" {
            to.query_row(
                "SELECT tbl_name FROM shape.sqlite_master WHERE name = ?1",
                [name],
                |r| r.get(0),
            )?
        } else {
            name.clone()
        };
        if skipped(&table) {
            continue;
        }
        to.execute_batch(sql)?;
        if kind == "table" {
            tables.push(table);
        }
    }
    // Per table copied each round: its columns (what each becomes) and the shape's rows.
    let mut copies: Vec<(String, Vec<Column>, Vec<Vec<Sql>>)> = Vec::new();
    for table in &tables {
        let info: Vec<(String, String)> = to
            .prepare("SELECT name, type FROM shape.pragma_table_info(?1)")?
            .query_map([table], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<Result<_, _>>()?;
        if !matches!(table.as_str(), "sessions" | "session")
            && !info.iter().any(|(c, _)| c == "session_id")
        {
            to.execute(
                &format!("INSERT INTO main.\"{table}\" SELECT * FROM shape.\"{table}\""),
                [],
            )?;
            continue;
        }
        let columns: Vec<Column> = info
            .iter()
            .map(|(name, kind)| {
                let role = match name.as_str() {
                    "id" if kind.to_ascii_uppercase().contains("INT") => Role::Numbered,
                    "id" | "session_id" | "parent_session_id" | "parent_id" | "message_id"
                    | "summary_message_id" => Role::Id,
                    _ => Role::Text,
                };
                Column {
                    name: name.clone(),
                    role,
                }
            })
            .collect();
        let rows: Vec<Vec<Sql>> = to
            .prepare(&format!("SELECT * FROM shape.\"{table}\" ORDER BY rowid"))?
            .query_map([], |r| {
                (0..columns.len()).map(|i| r.get::<_, Sql>(i)).collect()
            })?
            .collect::<Result<_, _>>()?;
        copies.push((table.clone(), columns, rows));
    }
    let mut n = 0u64;
    while n == 0 || fs::metadata(out)?.len() < target {
        let tx = to.transaction()?;
        for (table, columns, rows) in &copies {
            let kept: Vec<&Column> = columns
                .iter()
                .filter(|c| c.role != Role::Numbered)
                .collect();
            let names: Vec<String> = kept.iter().map(|c| format!("\"{}\"", c.name)).collect();
            let marks: Vec<String> = (1..=kept.len()).map(|i| format!("?{i}")).collect();
            let mut insert = tx.prepare_cached(&format!(
                "INSERT INTO main.\"{table}\" ({}) VALUES ({})",
                names.join(", "),
                marks.join(", ")
            ))?;
            for row in rows {
                let values: Vec<Sql> = columns
                    .iter()
                    .zip(row)
                    .filter(|(c, _)| c.role != Role::Numbered)
                    .map(|(c, v)| match (c.role, v) {
                        (Role::Id, Sql::Text(t)) => Sql::Text(format!("{t}-{n}")),
                        (Role::Text, Sql::Text(t)) if n > 0 => Sql::Text(vary(t, n)),
                        _ => v.clone(),
                    })
                    .collect();
                insert.execute(rusqlite::params_from_iter(values))?;
            }
        }
        tx.commit()?;
        n += 1;
    }
    drop(to);
    let _ = fs::remove_file(&made);
    eprintln!(
        "wrote {n} copies of the sessions of {} to {}",
        shape.display(),
        out.display()
    );
    Ok(())
}

/// What a store's column becomes in a copy.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    /// An integer id: left to SQLite.
    Numbered,
    /// A text id (or a reference to one): suffixed with the repeat.
    Id,
    /// Anything else: its prose varied.
    Text,
}

/// A column of a table copied each round.
struct Column {
    name: String,
    role: Role,
}

/// The prefix Hermes writes before content it stores as JSON.
const HERMES_JSON: &str = "\0json:";

/// `text` of repeat `n` with its prose varied (see [`store`]): JSON (also after Hermes'
/// prefix) walked, any other text with a space shifted word by word.
fn vary(text: &str, n: u64) -> String {
    if let Some(json) = text.strip_prefix(HERMES_JSON) {
        return format!("{HERMES_JSON}{}", vary(json, n));
    }
    let trimmed = text.trim_start();
    if trimmed.starts_with('{') || trimmed.starts_with('[') {
        if let Ok(mut v) = serde_json::from_str::<Value>(text) {
            vary_json(&mut v, n);
            return v.to_string();
        }
    }
    if text.contains(char::is_whitespace) {
        shift_words(text, n)
    } else {
        text.to_owned()
    }
}

/// Varies every string of `v` with [`vary`] (object keys kept).
fn vary_json(v: &mut Value, n: u64) {
    match v {
        Value::String(s) => *s = vary(s, n),
        Value::Array(items) => items.iter_mut().for_each(|i| vary_json(i, n)),
        Value::Object(map) => map.values_mut().for_each(|i| vary_json(i, n)),
        _ => {}
    }
}

/// `text` with each lowercase ASCII word of four letters or more shifted through the alphabet
/// by a key of `n` and the word's place (never 0), everything else as it was.
fn shift_words(text: &str, n: u64) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    let mut word = 0u64;
    while i < bytes.len() {
        let end = bytes[i..]
            .iter()
            .position(|b| !b.is_ascii_lowercase())
            .map_or(bytes.len(), |p| i + p);
        if end == i {
            out.push(bytes[i]);
            i += 1;
            continue;
        }
        if end - i >= 4 {
            word += 1;
            let mixed = n
                .wrapping_mul(0x9E37_79B9_7F4A_7C15)
                .wrapping_add(word)
                .wrapping_mul(0xBF58_476D_1CE4_E5B9);
            let key = (mixed >> 33) % 25 + 1;
            out.extend(
                bytes[i..end]
                    .iter()
                    .map(|b| b'a' + ((b - b'a') as u64 + key) as u8 % 26),
            );
        } else {
            out.extend_from_slice(&bytes[i..end]);
        }
        i = end;
    }
    // Only ASCII letters were replaced by ASCII letters.
    String::from_utf8(out).unwrap_or_else(|_| text.to_owned())
}

/// A Hermes store at `out` (schema 30's columns) holding the sessions of `export`, `hermes
/// sessions export` lines.
fn hermes_shape(export: &Path, out: &Path) -> Result<(), Box<dyn std::error::Error>> {
    use rusqlite::Connection;
    let _ = fs::remove_file(out);
    let db = Connection::open(out)?;
    db.execute_batch(
        "CREATE TABLE schema_version (version INTEGER NOT NULL);
         INSERT INTO schema_version VALUES (30);
         CREATE TABLE state_meta (key TEXT PRIMARY KEY, value TEXT);
         CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT NOT NULL, model TEXT,
             model_config TEXT, system_prompt TEXT, parent_session_id TEXT,
             started_at REAL NOT NULL, ended_at REAL, input_tokens INTEGER DEFAULT 0,
             output_tokens INTEGER DEFAULT 0, estimated_cost_usd REAL, cwd TEXT, title TEXT);
         CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL,
             role TEXT NOT NULL, content TEXT, tool_call_id TEXT, tool_calls TEXT,
             tool_name TEXT, timestamp REAL NOT NULL, finish_reason TEXT, reasoning TEXT,
             reasoning_content TEXT, observed INTEGER DEFAULT 0,
             active INTEGER NOT NULL DEFAULT 1, compacted INTEGER NOT NULL DEFAULT 0);
         CREATE INDEX idx_messages_session ON messages(session_id, timestamp);
         CREATE INDEX idx_sessions_parent ON sessions(parent_session_id);",
    )?;
    let text = fs::read_to_string(export)?;
    let json_text = |v: &Value| match v {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    };
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let s: Value = serde_json::from_str(line)?;
        db.execute(
            "INSERT INTO sessions VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
            rusqlite::params![
                s["id"].as_str(),
                s["source"].as_str().unwrap_or("cli"),
                s["model"].as_str(),
                json_text(&s["model_config"]),
                s["system_prompt"].as_str(),
                s["parent_session_id"].as_str(),
                s["started_at"].as_f64().unwrap_or_default(),
                s["ended_at"].as_f64(),
                s["input_tokens"].as_i64(),
                s["output_tokens"].as_i64(),
                s["estimated_cost_usd"].as_f64(),
                s["cwd"].as_str(),
                s["title"].as_str(),
            ],
        )?;
        for m in s["messages"].as_array().into_iter().flatten() {
            let calls = m["tool_calls"]
                .as_array()
                .filter(|c| !c.is_empty())
                .map(|c| Value::from(c.clone()).to_string());
            db.execute(
                "INSERT INTO messages (session_id, role, content, tool_call_id, tool_calls,
                    tool_name, timestamp, finish_reason, reasoning, reasoning_content)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                rusqlite::params![
                    s["id"].as_str(),
                    m["role"].as_str(),
                    json_text(&m["content"]),
                    m["tool_call_id"].as_str(),
                    calls,
                    m["tool_name"].as_str(),
                    m["timestamp"].as_f64().unwrap_or_default(),
                    m["finish_reason"].as_str(),
                    m["reasoning"].as_str(),
                    m["reasoning_content"].as_str(),
                ],
            )?;
        }
    }
    Ok(())
}
