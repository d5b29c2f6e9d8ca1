#!/usr/bin/env bash
# Coverage-guided fuzzing of trajkit with cargo fuzz (libFuzzer); see docs/fuzzing.md.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]   run each target for SECONDS (default 20)
#
# Targets (fuzz/fuzz_targets/): framer, convert, ralph, spec, pipeline, show, template,
# tokenizer; all when none is named.
# Seeds are made afresh in fuzz/corpus/<target>/ from sample_data/ and, when it is beside the
# checkout, the shared corpus (../shared/corpus, never copied into the repository); what the
# fuzzer finds is added there too, so a longer campaign goes on where the last one stopped.
#
# Environment:
#   FUZZ_SANITIZER  none (default: works on the stable toolchain) or address (AddressSanitizer
#                   with leak detection, through RUSTC_BOOTSTRAP=1; for long campaigns)
#   FUZZ_JOBS       parallel fuzzing processes per target (default 1)
#   FUZZ_CODEGEN_UNITS  codegen units of the fuzz build (default 1, cargo fuzz's: the fastest
#                   runs); CI's smoke sets 16, which builds in less time for slightly slower runs
#
# Exit status: 0 when no target found anything; otherwise libFuzzer's, and the crashing input is
# in fuzz/artifacts/<target>/ (turn it into a regression test, then delete it).
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH="${1:-20}"
shift || true
TARGETS=("$@")
if [ ${#TARGETS[@]} -eq 0 ]; then
  TARGETS=(framer convert ralph spec pipeline show template tokenizer)
fi
SANITIZER="${FUZZ_SANITIZER:-none}"
JOBS="${FUZZ_JOBS:-1}"
SHARED="${TRAJKIT_SHARED:-../shared}"

if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "scripts/fuzz.sh needs cargo-fuzz: cargo install cargo-fuzz --locked --version 0.13.2" >&2
  exit 2
fi
BUILD=(-s "$SANITIZER" --codegen-units "${FUZZ_CODEGEN_UNITS:-1}")
if [ "$SANITIZER" != none ]; then
  # Sanitizers are unstable compiler options; the stable toolchain accepts them this way. The
  # instrumented build goes to a target directory of its own, so the two builds do not
  # invalidate each other.
  export RUSTC_BOOTSTRAP=1
  BUILD+=(--target-dir "target/$SANITIZER")
fi

echo "== fuzz seeds"
python3 - "$SHARED" <<'PY'
import json, os, pathlib, sys

shared = pathlib.Path(sys.argv[1]) / "corpus"
root = pathlib.Path("fuzz/corpus")
endings = [".jsonl", ".json", ".traj", ".db", "", ".parquet"]

def put(target, name, data):
    d = root / target
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_bytes(data)

def ending_of(path):
    for i, e in enumerate(endings):
        if e and path.name.endswith(e):
            return i
    return 4

def files_under(top):
    return sorted(p for p in top.rglob("*") if p.is_file() and p.stat().st_size <= 1 << 20)

inputs = [p for p in files_under(pathlib.Path("sample_data")) if "ralph" not in p.parts]
if (shared / "agent-logs").is_dir():
    inputs += [p for p in files_under(shared / "agent-logs") if p.name != "README.md"]
for i, p in enumerate(inputs):
    data = p.read_bytes()
    put("framer", f"seed-{i:04}", data)
    put("convert", f"seed-{i:04}", bytes([0, ending_of(p)]) + data)

ralph = pathlib.Path("sample_data/ralph")
order = ["tasks/task-001/metadata.json", "tasks/task-001/reflections.jsonl",
         "tasks/task-001/attempts/001/attempt.json", "tasks/task-001/attempts/001/plan.md",
         "tasks/task-001/attempts/001/outcome.json", "tasks/task-001/attempts/001/actions.jsonl",
         "tasks/task-001/attempts/002/actions.jsonl", "tasks/task-002/attempts/001/actions.jsonl"]
parts = [(ralph / f).read_bytes() if (ralph / f).is_file() else b"" for f in order]
put("ralph", "seed-sample", b"\n%%\n".join(parts))

put("pipeline", "seed-sample", pathlib.Path("sample_data/pipeline.toml").read_bytes())

# show: ADP trajectories (byte 0: 0-3, colours and folding), and texts put in every string
# (byte 0: 4-7), terminal escape sequences among them.
adp = [l for l in pathlib.Path("sample_data/adp/v1.5.jsonl").read_bytes().split(b"\n") if l.strip()]
for i, line in enumerate(adp[:8]):
    put("show", f"trajectory-{i}", bytes([i % 4]) + line)
texts = [b"plain text\nsecond line\tand a tab", b"\x1b]0;title\x07\x1b[2J\x1b[31mred\x1b[0m",
         b"\x1b]52;c;ZXZpbA==\x07 \x1b]8;;https://x.example/\x1b\\link\x1b]8;;\x1b\\",
         "\u009b2J \u0085".encode(), b"shown\rhidden\x08\x08\x08", b"x" * 3000]
for i, text in enumerate(texts):
    put("show", f"text-{i}", bytes([4 + i % 4]) + text)
# Chat templates (each with the target's fixed conversation), and the tokenizer of the tests
# with a text.
fixtures = pathlib.Path("tests/fixtures/templates")
for t in sorted(fixtures.glob("*.jinja")):
    put("template", f"seed-{t.stem}", t.read_bytes())
# Templates that build past their budgets: a list doubled past minijinja's 32 lazy
# concatenations (copied whole), a dict nested in itself written out, tuples added together.
for name, body in [("list_doubling", "{% set ns = namespace(l=[1, 2]) %}{% for i in range(40) %}{% set ns.l = ns.l + ns.l %}{% endfor %}{{ ns.l|length }}"),
                   ("dict_doubling", "{% set ns = namespace(d={'a': 1}) %}{% for i in range(40) %}{% set ns.d = {'x': ns.d, 'y': ns.d} %}{% endfor %}{{ ns.d|string|length }}"),
                   ("tuple_doubling", "{% set ns = namespace(t=('a', 'b')) %}{% for i in range(40) %}{% set ns.t = ns.t + ns.t %}{% endfor %}{{ ns.t|length }}")]:
    put("template", f"seed-{name}", body.encode())
config = json.loads((fixtures / "header_blocks.tokenizer_config.json").read_text())
for named in config["chat_template"]:
    put("template", f"seed-header_blocks-{named['name']}", named["template"].encode())
put("tokenizer", "seed-words",
    (fixtures / "words.tokenizer.json").read_bytes() + b"\n%%\nhello task: ls a.txt")

specs = sorted(pathlib.Path("converters").glob("*.toml"))
# The shipped specs in the order of spec::EMBEDDED (alphabetical, as the files are).
for i, spec in enumerate(specs):
    raw = shared / "adp" / spec.stem / "sample_raw.json"
    records = b""
    if raw.is_file():
        rows = json.loads(raw.read_text())
        records = b"".join(json.dumps(r).encode() + b"\n" for r in rows[:20])
    put("spec", f"shipped-{spec.stem}", bytes([i + 1]) + records)
    put("spec", f"text-{spec.stem}", b"\x00" + spec.read_bytes() + b"\n%%\n" + records)
# The constructs of the spec language, each a small spec with its records (the tests run them).
for spec in sorted(pathlib.Path("tests/fixtures/specs").glob("*.toml")):
    records = spec.with_suffix(".jsonl")
    records = records.read_bytes() if records.is_file() else b""
    put("spec", f"construct-{spec.stem}", b"\x00" + spec.read_bytes() + b"\n%%\n" + records)
PY

echo "== fuzz build (sanitizer: $SANITIZER)"
(cd fuzz && cargo fuzz build "${BUILD[@]}")
mkdir -p fuzz/target/logs
status=0
for target in "${TARGETS[@]}"; do
  echo "== fuzz $target for ${SECONDS_EACH}s"
  mkdir -p "fuzz/corpus/$target"
  log="fuzz/target/logs/$target.log"
  failed=0
  extra=()
  if [ "$JOBS" -gt 1 ]; then
    # Several processes; each writes its own fuzz/fuzz-N.log.
    extra+=(-jobs="$JOBS" -workers="$JOBS")
  fi
  asan="${ASAN_OPTIONS:-}"
  if [ "$target" = spec ] && [ "$SANITIZER" = address ]; then
    # A loaded spec's name is leaked on purpose (docs/fuzzing.md): neither libFuzzer's check
    # per input nor AddressSanitizer's at exit may count it.
    extra+=(-detect_leaks=0)
    asan="${asan:+$asan:}detect_leaks=0"
  fi
  (cd fuzz && ASAN_OPTIONS="$asan" cargo fuzz run "${BUILD[@]}" "$target" "corpus/$target" -- \
      -max_total_time="$SECONDS_EACH" -timeout=30 -rss_limit_mb=4096 -max_len=262144 \
      -print_final_stats=1 "${extra[@]}") >"$log" 2>&1 || failed=$?
  # The final stats (executions, coverage, peak memory), and what went wrong if anything did.
  grep -E '^(stat::(number_of_executed_units|new_units_added|peak_rss_mb)|#[0-9]+ +DONE)' "$log" || true
  if compgen -G "fuzz/artifacts/$target/*" >/dev/null || [ "$failed" -ne 0 ]; then
    tail -n 40 "$log" >&2
    echo "fuzz: $target failed; the input is in fuzz/artifacts/$target/, the log in $log" >&2
    status=1
  fi
done
exit "$status"
