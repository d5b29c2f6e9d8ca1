//! Writes a rewards JSON-lines file for the `join` benchmark, keyed by the ids of a trajectory
//! file (as `gen_bench_input` writes them).
//!
//! Usage: `cargo run --release --example gen_bench_rewards -- TRAJECTORIES.jsonl OUT.jsonl [N]`
//!
//! Writes N records (default 1,000,000) `{"id", "reward", "resolved", "components"}`: one per
//! trajectory id, in order, then `other-<i>` ids for trajectories not in the file (an evaluation
//! of a whole dataset joined onto one shard). Values are derived from the record number, so
//! the output is deterministic.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};

use serde::Deserialize;
use serde_json::json;

#[derive(Deserialize)]
struct Id {
    id: String,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(input), Some(out_path)) = (args.first(), args.get(1)) else {
        return Err("usage: gen_bench_rewards TRAJECTORIES.jsonl OUT.jsonl [N]".into());
    };
    let n: usize = args.get(2).map_or(Ok(1_000_000), |s| s.parse())?;
    let mut ids = Vec::new();
    for line in BufReader::with_capacity(1 << 20, File::open(input)?).lines() {
        let line = line?;
        if ids.len() >= n {
            break;
        }
        if !line.trim().is_empty() {
            ids.push(serde_json::from_str::<Id>(&line)?.id);
        }
    }
    let matching = ids.len();
    let mut out = BufWriter::with_capacity(1 << 20, File::create(out_path)?);
    for i in 0..n {
        let id = ids.get(i).cloned().unwrap_or_else(|| format!("other-{i}"));
        let record = json!({
            "id": id,
            "reward": (i % 101) as f64 / 100.0,
            "resolved": i % 3 == 0,
            "components": {"tests": (i % 7) as f64 / 7.0, "format": 1.0},
        });
        serde_json::to_writer(&mut out, &record)?;
        out.write_all(b"\n")?;
    }
    out.flush()?;
    eprintln!("wrote {n} rewards ({matching} for trajectories of {input}) to {out_path}");
    Ok(())
}
