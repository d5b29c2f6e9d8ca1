"""Reads trajkit exports with the Python tools people load datasets with.

Usage: check.py ADP_DIR PARQUET_DIR OPENAI_DIR HF_DIR SHAREGPT_DIR

ADP_DIR is an `--to adp` export made with the same inputs and options as PARQUET_DIR: its JSON
lines give the expected ids of every Parquet shard. Prints one line per check and exits 1 if
any failed.
"""
import json
import os
import sys

import datasets
import duckdb
import polars as pl
import pyarrow.parquet as pq

COLUMNS = [
    "id", "schema_version", "source_format", "outcome", "reward", "reward_components",
    "reflections", "num_steps", "num_actions", "num_observations", "num_chars",
    "available_custom_tools", "available_code_languages", "steps", "details",
]
STEP_FIELDS = [
    "class", "content", "content_json", "language", "function", "kwargs", "description",
    "reasoning_content", "name", "source", "annotations", "html", "axtree", "url", "image",
    "viewport_size", "tool_call_id", "reward",
]

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def manifest(d):
    with open(os.path.join(d, "manifest.json"), encoding="utf-8") as f:
        return json.load(f)


def json_lines(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def check_parquet(adp_dir, pq_dir):
    m = manifest(pq_dir)
    by_split = {}
    for f in m["files"]:
        path = os.path.join(pq_dir, f["path"])
        name = f["path"]
        expected = [t["id"] for t in json_lines(os.path.join(adp_dir, name[: -len(".parquet")] + ".jsonl"))]
        by_split.setdefault(f["split"], []).extend(expected)

        table = pq.read_table(path)
        check(table.column_names == COLUMNS, f"pyarrow {name}: documented columns")
        steps = table.schema.field("steps").type.value_type
        check([steps.field(i).name for i in range(steps.num_fields)] == STEP_FIELDS,
              f"pyarrow {name}: documented step fields")
        check(table.column("id").to_pylist() == expected, f"pyarrow {name}: {len(expected)} ids in order")
        meta = pq.ParquetFile(path).metadata.metadata or {}
        check(b"trajkit.version" in meta and b"trajkit.options" in meta, f"pyarrow {name}: trajkit metadata")

        df = pl.read_parquet(path)
        check(df.columns == COLUMNS, f"polars {name}: documented columns")
        check(df["id"].to_list() == expected, f"polars {name}: ids")
        classes = df["steps"].list.eval(pl.element().struct.field("class")).to_list()
        check(all(len(c) == n for c, n in zip(classes, df["num_steps"].to_list())),
              f"polars {name}: steps match num_steps")

        con = duckdb.connect()
        con.execute("SET threads TO 1")
        ids = [r[0] for r in con.execute("SELECT id FROM read_parquet(?)", [path]).fetchall()]
        check(ids == expected, f"duckdb {name}: ids")
        n_steps = con.execute(
            "SELECT sum(len(steps)) = sum(num_steps) FROM read_parquet(?)", [path]).fetchone()[0]
        check(bool(n_steps), f"duckdb {name}: len(steps) = num_steps")

    for split, expected in by_split.items():
        d = datasets.load_dataset("parquet", data_dir=os.path.join(pq_dir, "data"), split=split)
        check(d["id"] == expected, f"datasets parquet data_dir split {split}: {len(expected)} ids")
        card = datasets.load_dataset(pq_dir, split=split)
        check(card["id"] == expected, f"datasets via the dataset card, split {split}: ids")
        check(card.column_names == COLUMNS, f"datasets via the dataset card, split {split}: columns")


def check_openai_record(r, where):
    problems = []
    msgs = r.get("messages")
    if not isinstance(msgs, list) or not msgs:
        return [f"{where}: no messages"]
    open_calls = {}
    answered = set()
    for i, m in enumerate(msgs):
        role = m.get("role")
        if role not in ("system", "user", "assistant", "tool"):
            problems.append(f"{where} message {i}: role {role!r}")
        for c in m.get("tool_calls") or []:
            if c.get("type") != "function":
                problems.append(f"{where} message {i}: call type {c.get('type')!r}")
            try:
                args = json.loads(c["function"]["arguments"])
                if not isinstance(args, dict):
                    problems.append(f"{where} message {i}: arguments are not an object")
            except (KeyError, TypeError, ValueError) as e:
                problems.append(f"{where} message {i}: arguments do not parse: {e}")
            open_calls[c.get("id")] = i
        if role == "tool":
            cid = m.get("tool_call_id")
            if cid not in open_calls or cid in answered:
                problems.append(f"{where} message {i}: tool_call_id {cid!r} answers no open call")
            answered.add(cid)
    # The one documented exception: a trajectory that ends with an action ends with the
    # assistant's calls, which nothing answers (OpenAI trains on such a final message).
    last = len(msgs) - 1
    unanswered = {c for c, i in open_calls.items() if c not in answered and i != last}
    if unanswered:
        problems.append(f"{where}: calls never answered: {sorted(map(str, unanswered))}")
    if not any(m.get("role") == "assistant" for m in msgs):
        problems.append(f"{where}: no assistant message")
    return problems


def check_sft(target, d):
    m = manifest(d)
    files = {}
    for f in m["files"]:
        files.setdefault(f["split"], []).append(os.path.join(d, f["path"]))
    total = 0
    for split, paths in files.items():
        ds = datasets.load_dataset("json", data_files={split: paths}, split=split)
        rows = sum(f["rows"] for f in m["files"] if f["split"] == split)
        check(len(ds) == rows, f"datasets json {target} split {split}: {rows} rows")
        total += len(ds)
    check(total == m["counts"]["written"], f"datasets json {target}: every written row loads")
    if target == "openai":
        problems = []
        for paths in files.values():
            for p in paths:
                for n, r in enumerate(json_lines(p)):
                    problems += check_openai_record(r, f"{os.path.basename(p)} row {n}")
        for p in problems[:20]:
            print("     " + p)
        check(not problems, f"openai: roles, every tool call answered exactly once, arguments are JSON ({len(problems)} problems)")


def main():
    adp_dir, pq_dir, openai_dir, hf_dir, sharegpt_dir = sys.argv[1:6]
    print(f"pyarrow {pq.__name__}, polars {pl.__version__}, duckdb {duckdb.__version__}, datasets {datasets.__version__}")
    check_parquet(adp_dir, pq_dir)
    for target, d in (("openai", openai_dir), ("hf", hf_dir), ("sharegpt", sharegpt_dir)):
        check_sft(target, d)
    print(f"{len(failures)} failed")
    sys.exit(1 if failures else 0)


main()
