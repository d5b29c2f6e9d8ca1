//! Writes a large JSON-lines file for benchmarks, from real record shapes.
//!
//! Usage: `cargo run --release --example gen_bench_input -- OUT.jsonl [BYTES] [SHAPES_DIR]`
//! or `... -- OUT_DIR BYTES SHAPES_DIR rollouts` (Codex CLI rollouts, below).
//!
//! The shapes are the records (JSON objects) of every `*.json` or `*.jsonl` file in `SHAPES_DIR`,
//! recursively. Without `SHAPES_DIR`, they are the ADP trajectories (an `id` and a `content`
//! list of `class_`-tagged steps) of `../shared/corpus/adp`, falling back to `sample_data/adp`.
//! They are written in turn, each made unique (`<trajectory_id>-<n>`, Reflexion iteration `n`,
//! or `<id>#<n>`), until the output reaches BYTES (default 1 GiB). The output is deterministic.
//!
//! With `rollouts`, each `*.jsonl` file of `SHAPES_DIR` is a Codex CLI rollout (a session per
//! file) and `OUT_DIR` gets files `rollout-<n>.jsonl` of about 1 MB until BYTES: a shape's first
//! line (its `session_meta`, id made `<id>-<n>`), then its other lines repeated, call ids made
//! `<call_id>-<k>` in repeat `k` so that each output still answers its own call.

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
        } else if p.extension().is_some_and(|e| e == "json" || e == "jsonl") {
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
/// key. LedgerMind events (a `kind` and a `timestamp`) keep their sessions: every event of a
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
    } else {
        let id = r["id"].as_str().unwrap_or("t").to_owned();
        r["id"] = Value::String(format!("{id}#{n}"));
    }
}

/// Writes Codex rollouts shaped like the files of `shapes` into `out` (see the module doc).
fn rollouts(out: &Path, target: u64, shapes: &Path) -> Result<(), Box<dyn std::error::Error>> {
    const FILE_BYTES: u64 = 1 << 20;
    let mut files = Vec::new();
    collect(shapes, &mut files);
    let sessions: Vec<Vec<Value>> = files
        .iter()
        .filter_map(|f| fs::read_to_string(f).ok())
        .map(|text| {
            text.lines()
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect::<Vec<Value>>()
        })
        .filter(|lines| lines.len() > 1)
        .collect();
    if sessions.is_empty() {
        return Err("no rollout shapes found".into());
    }
    fs::create_dir_all(out)?;
    let (mut written, mut n) = (0u64, 0u64);
    while written < target {
        let lines = &sessions[(n % sessions.len() as u64) as usize];
        let path = out.join(format!("rollout-{n:06}.jsonl"));
        let mut file = BufWriter::with_capacity(1 << 20, fs::File::create(path)?);
        let mut bytes = 0u64;
        let mut head = lines[0].clone();
        let id = if head.get("payload").is_some() {
            head.pointer_mut("/payload/id")
        } else {
            head.get_mut("id")
        };
        if let Some(id) = id {
            *id = Value::String(format!("{}-{n}", id.as_str().unwrap_or("s")));
        }
        let put = |v: &Value, file: &mut BufWriter<fs::File>| -> std::io::Result<u64> {
            let line = serde_json::to_vec(v)?;
            file.write_all(&line)?;
            file.write_all(b"\n")?;
            Ok(line.len() as u64 + 1)
        };
        bytes += put(&head, &mut file)?;
        let mut k = 0u64;
        while bytes < FILE_BYTES {
            for line in &lines[1..] {
                let mut v = line.clone();
                let slot = if v.get("payload").is_some() {
                    v.pointer_mut("/payload/call_id")
                } else {
                    v.get_mut("call_id")
                };
                if let Some(id) = slot {
                    *id = Value::String(format!("{}-{k}", id.as_str().unwrap_or("c")));
                }
                bytes += put(&v, &mut file)?;
            }
            k += 1;
        }
        file.flush()?;
        written += bytes;
        n += 1;
    }
    eprintln!(
        "wrote {n} rollouts ({written} bytes) from {} shapes to {}",
        sessions.len(),
        out.display()
    );
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [out, bytes, shapes, mode] = args.as_slice() {
        if mode == "rollouts" {
            return rollouts(Path::new(out), bytes.parse()?, Path::new(shapes));
        }
        return Err(format!("unknown mode {mode:?} (known: rollouts)").into());
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
