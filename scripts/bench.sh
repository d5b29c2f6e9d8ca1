#!/usr/bin/env bash
# Throughput and peak memory of trajkit on a generated ADP JSON-lines input.
#
#   scripts/bench.sh [BYTES]        (default 1 GiB; the inputs are cached in $BENCH_DIR)
#   BENCH_ONLY=join scripts/bench.sh [BYTES]    (only the join case)
#   TRAJKIT_BIN=/path/to/trajkit scripts/bench.sh   (time that binary, e.g. a build of main, to compare)
#   BENCH_ONLY=export scripts/bench.sh [BYTES]  (only the export cases: Parquet, SFT targets)
#   BENCH_ONLY=seeds scripts/bench.sh [BYTES]   (only the seed-format, spec and agent-log conversions)
#   BENCH_ONLY=agents scripts/bench.sh [BYTES]  (only the agent-log conversions: Codex, Claude Code, ...)
#   BENCH_ONLY=run scripts/bench.sh [BYTES]     (only `trajkit run` on a mixed input of 2 x BYTES)
#   BENCH_ONLY=redact scripts/bench.sh [BYTES]  (only redact: the ADP input, then near-match texts
#       of NEAR_BYTES each, default 100000000, as one message and as 1 MB messages)
#   ADP_REPO=/path/to/agent-data-protocol BENCH_ONLY=run scripts/bench.sh
#       also times ADP's agenttuning_os raw->std->SFT Python scripts against trajkit on the same
#       ADP_BYTES of generated raw records (default 200 MB), run in ADP_REPO with PYTHONPATH=.
#       and MY_DATASET=agenttuning_os, as `ADP_RAW_TO_STD < raw | ADP_STD_TO_SFT > sft`; the
#       defaults are the commands of ADP's README layout (datasets/agenttuning_os/
#       raw_to_standardized.py, then agents/openhands/std_to_sft.py --is_web no, with python3);
#       set them for another checkout, with ADP's requirements installed in that python.
#
# Prints, per command, the input size, wall time, MB/s and peak RSS (GNU time's %M).
# ADP: BYTES of trajectories shaped like the shared corpus. Seed formats: BYTES/4 each, shaped
# like the bundled samples (small, structure-heavy records), and for Reflexion also like the
# real example in the shared corpus (long diffs and outputs) when it is there. Agent logs
# (Codex, Claude Code, Gemini CLI, mini-swe-agent, Inspect AI, ATIF, Pi, Droid, Kimi CLI, Aider,
# Qwen Code, Copilot CLI, Cursor, Letta Code): BYTES/4 each of 1 MB
# session files in a directory, shaped like the bundled sample, and like the shared corpus's
# real logs of the format when it is there. Crush, OpenCode, Hermes and Goose: one SQLite store
# each of BYTES/4, the sample's (and the corpus's, when there) sessions repeated
# (BYTES=4294967296 makes stores of 1 GB).
# join: the ADP input joined with a 1,000,000-record rewards JSON-lines file (one record per
# trajectory of the input, the rest for ids not in it); MB/s is of trajectory input, and the
# time includes indexing the rewards.
# run: one pass over BYTES of ADP plus BYTES/6 each of agenttuning_os raw records, memabra,
# Reflexion, OpenAI chats, ShareGPT and SWE-agent rows (2 x BYTES in all), joined with the
# 1,000,000-record rewards file, exported to Parquet and to openai (MB/s of all the input);
# then the same pipeline with a [redact] table, and its time over the plain run's.
set -euo pipefail
cd "$(dirname "$0")/.."
BYTES="${1:-1073741824}"
BENCH_DIR="${BENCH_DIR:-${TMPDIR:-/tmp}/trajkit-bench}"
mkdir -p "$BENCH_DIR"
BENCH_DIR=$(cd "$BENCH_DIR" && pwd)
INPUT="$BENCH_DIR/adp-$BYTES.jsonl"

if [ ! -x /usr/bin/time ]; then
  echo "bench.sh needs GNU time for peak memory: apt-get install time" >&2
  exit 2
fi

BENCH_ONLY="${BENCH_ONLY:-all}"
TARGET="${CARGO_TARGET_DIR:-target}"
cargo build --release --quiet --bin trajkit --example gen_bench_input --example gen_bench_rewards
if [ ! -s "$INPUT" ]; then
  "$TARGET"/release/examples/gen_bench_input "$INPUT" "$BYTES"
fi
SIZE=$(stat -L -c %s "$INPUT")
BIN="${TRAJKIT_BIN:-$TARGET/release/trajkit}"   # TRAJKIT_BIN: time another build

timed() {
  # Runs "$@" with GNU time writing "%e %M" to a file, so the command's own stderr is ignored.
  local log="$BENCH_DIR/time.log"
  /usr/bin/time -o "$log" -f "%e %M" "$@" >/dev/null 2>&1 || true
  tail -n 1 "$log"   # GNU time writes "Command exited with non-zero status N" first on failure
}

report() {
  local name="$1"; shift
  show "$name" "$(timed "$@")"
}

show() {
  # Prints a measured "%e %M" line for the command called $1.
  local secs=${2% *} rss=${2#* }
  awk -v n="$1" -v b="$SIZE" -v s="$secs" -v r="$rss" 'BEGIN {
    printf "%-46s %8.0f MB in %6.2f s  %7.0f MB/s  peak RSS %5.0f MB\n", n, b/1e6, s, (s > 0 ? b/1e6/s : 0), r/1024 }'
}

echo "trajkit $($BIN --version | awk '{print $2}') on $(nproc) cores, input $INPUT"

# ADP's own agenttuning_os scripts (raw -> standardized -> OpenHands SFT, one process each,
# chained by a pipe as ADP's README runs them) against `trajkit run` (agenttuning_os -> openai)
# on the same raw records; MB/s of raw input.
adp_compare() {
  local bytes="${ADP_BYTES:-200000000}"
  local to_std="${ADP_RAW_TO_STD:-python3 datasets/agenttuning_os/raw_to_standardized.py}"
  local to_sft="${ADP_STD_TO_SFT:-python3 agents/openhands/std_to_sft.py --is_web no}"
  local raw="$BENCH_DIR/adp-compare-os-$bytes.jsonl" out="$BENCH_DIR/adp-compare"
  if [ ! -s "$raw" ]; then
    "$TARGET"/release/examples/gen_bench_input "$raw" "$bytes" \
      "$(shapes agenttuning_os "$OS_RAW")" 2>/dev/null
  fi
  SIZE=$(stat -L -c %s "$raw")
  mkdir -p "$out"
  local adp_line adp_secs
  # LITELLM_LOCAL_MODEL_COST_MAP: std_to_sft imports litellm, which would otherwise try to
  # download its model price list at import.
  adp_line=$(cd "$ADP_REPO" && PYTHONPATH=. MY_DATASET=agenttuning_os LITELLM_LOCAL_MODEL_COST_MAP=True \
    /usr/bin/time -o "$out/time.log" -f "%e %M" bash -c \
    "$to_std < '$raw' | $to_sft > '$out/adp-sft.jsonl'" \
    2>"$out/adp.err" && tail -n 1 "$out/time.log") || true
  adp_secs=${adp_line% *}
  if [ -z "$adp_line" ] || [ ! -s "$out/adp-sft.jsonl" ]; then
    echo "ADP scripts failed (see $out/adp.err)"
  else
    show "ADP raw_to_standardized | std_to_sft" "$adp_line"
    echo "  ($(wc -l < "$out/adp-sft.jsonl") SFT lines; peak RSS of the larger of the two processes)"
  fi
  printf '[[input]]\npath = "%s"\nformat = "agenttuning_os"\n\n[[export]]\nto = "openai"\noutput = "%s"\nforce = true\n' \
    "$raw" "$out/trajkit" > "$out/pipeline.toml"
  local line secs
  line=$(timed "$BIN" run -q "$out/pipeline.toml")
  secs=${line% *}
  show "run agenttuning_os -> openai (same records)" "$line"
  if [ -n "$adp_line" ]; then
    awk -v a="$adp_secs" -v t="$secs" 'BEGIN { printf "trajkit is %.1fx faster than the ADP scripts\n", a/t }'
  fi
  rm -rf "$out"
}

if [ "$BENCH_ONLY" = all ] || [ "$BENCH_ONLY" = run ]; then
  REWARDS="$BENCH_DIR/rewards-$BYTES-1000000.jsonl"
  if [ ! -s "$REWARDS" ]; then
    "$TARGET"/release/examples/gen_bench_rewards "$INPUT" "$REWARDS" 1000000 2>/dev/null
  fi
  # One shapes directory per format (the generator reads every record of a directory).
  shapes() {
    local dir="$BENCH_DIR/shapes-$1"
    mkdir -p "$dir"
    cp "$2" "$dir/"
    echo "$dir"
  }
  OS_RAW=../shared/corpus/adp/agenttuning_os/sample_raw.json
  PIPELINE="$BENCH_DIR/run-$BYTES.toml"
  {
    echo "[[input]]"
    echo "path = \"$INPUT\""
    echo "format = \"adp\""
  } > "$PIPELINE"
  RUN_SIZE=$SIZE
  for part in "memabra:sample_data/memabra/traces.jsonl" "reflexion:sample_data/reflexion/loop.jsonl" \
      "openai:sample_data/openai/chats.jsonl" "sharegpt:sample_data/sharegpt/conversations.json" \
      "swe-agent:sample_data/swe-agent/rows.jsonl" "agenttuning_os:$OS_RAW"; do
    format=${part%%:*}
    file=${part#*:}
    [ -f "$file" ] || continue
    mixed="$BENCH_DIR/mixed-$format-$((BYTES / 6)).jsonl"
    if [ ! -s "$mixed" ]; then
      "$TARGET"/release/examples/gen_bench_input "$mixed" "$((BYTES / 6))" "$(shapes "$format" "$file")" 2>/dev/null
    fi
    RUN_SIZE=$((RUN_SIZE + $(stat -L -c %s "$mixed")))
    printf '\n[[input]]\npath = "%s"\nformat = "%s"\n' "$mixed" "$format" >> "$PIPELINE"
  done
  cat >> "$PIPELINE" <<TOML

[[join]]
rewards = ["$REWARDS"]
key = "/id"
value = "/reward"
outcome = "/resolved"
components = "/components"

[[export]]
to = "parquet"
output = "$BENCH_DIR/run-parquet"
force = true

[[export]]
to = "openai"
output = "$BENCH_DIR/run-openai"
force = true
TOML
  SAVED_SIZE=$SIZE
  SIZE=$RUN_SIZE
  plain=$(timed "$BIN" run -q "$PIPELINE")
  show "run (mixed: convert, join, parquet, openai)" "$plain"
  report "run --threads 1 (same pipeline)" "$BIN" run -q --threads 1 "$PIPELINE"
  # The same pipeline with a [redact] table (redaction before both exports): the issue's
  # budget is 1.5x the plain run's time.
  REDACTED="$BENCH_DIR/run-$BYTES-redact.toml"
  { cat "$PIPELINE"; printf '\n[redact]\n'; } > "$REDACTED"
  redacted=$(timed "$BIN" run -q "$REDACTED")
  show "run with [redact] (same pipeline)" "$redacted"
  awk -v a="${plain% *}" -v b="${redacted% *}" 'BEGIN {
    printf "%-46s %.2fx the time of run without it\n", "run with [redact]", (a > 0 ? b / a : 0) }'
  rm -rf "$BENCH_DIR/run-parquet" "$BENCH_DIR/run-openai"
  if [ -n "${ADP_REPO:-}" ]; then
    adp_compare
  fi
  SIZE=$SAVED_SIZE
  if [ "$BENCH_ONLY" = run ]; then
    exit 0
  fi
fi

# export: Parquet and SFT JSON lines from the ADP input, 2 splits, 500 MB shards (MB/s of ADP
# input), and the Parquet read back into ADP JSON lines (MB/s of the ADP it gives back).
if [ "$BENCH_ONLY" = all ] || [ "$BENCH_ONLY" = export ]; then
  rm -rf "$BENCH_DIR/export"
  report "export --to parquet --split train=0.98,validation=0.02" "$BIN" export -q "$INPUT" \
    --to parquet --split train=0.98,validation=0.02 -o "$BENCH_DIR/export"
  report "convert --from parquet (ADP written)" "$BIN" convert -q --from parquet \
    "$BENCH_DIR/export/data" -o "$BENCH_DIR/from-parquet.jsonl"
  rm -f "$BENCH_DIR/from-parquet.jsonl"
  for to in openai hf sharegpt; do
    rm -rf "$BENCH_DIR/export"
    report "export --to $to --split train=0.98,validation=0.02" "$BIN" export -q "$INPUT" \
      --to "$to" --split train=0.98,validation=0.02 -o "$BENCH_DIR/export"
  done
  rm -rf "$BENCH_DIR/export"
  report "export --to openai --compress zstd --dedup" "$BIN" export -q "$INPUT" \
    --to openai --compress zstd --dedup -o "$BENCH_DIR/export"
  rm -rf "$BENCH_DIR/export"
  if [ "$BENCH_ONLY" = export ]; then
    exit 0
  fi
fi

# redact: the ADP input, then adversarial near-match texts of NEAR_BYTES (default 100 MB) of a
# unit repeated (a match that fails its check, a start without an end), in two shapes: one
# trajectory whose one message is all of it ("one"), and trajectories of one 1 MB message each
# ("1 MB each"); each with its speed over the ADP input's (redaction is linear: it should stay
# above a third).
if [ "$BENCH_ONLY" = all ] || [ "$BENCH_ONLY" = redact ]; then
  rm -f "$BENCH_DIR/out.jsonl"
  line=$(timed "$BIN" redact -q "$INPUT" -o "$BENCH_DIR/out.jsonl")
  show "redact" "$line"
  corpus_secs=${line% *}
  CORPUS_SIZE=$SIZE
  NEAR_BYTES="${NEAR_BYTES:-100000000}"
  # (`a://b:c@` is no near match: every unit is a URL password, replaced by a placeholder
  # three times its size, and the longer result is scanned again.)
  for unit in '-----BEGIN OPENSSH PRIVATE KEY-----' '1.' '10.0.0.' 'a://b:c@' 'a://b:$c@' \
      '-----BEGIN RSA PRIVATE KEY-----\nMIIB' 'host=a;' '==1.2.3.4 8.8.8.8 ' 'password=aaaaaaa1 ' \
      'ghp_abc sk-ant-api03-x xoxb-1 glpat-x hf_ab AIzaB eyJa. ' 'aB3+/x9Z' \
      'a://b:<SECRET:url_password>@'; do
    for shape in one 1000000; do
      near="$BENCH_DIR/near-$(printf %s "$unit" | md5sum | cut -c1-8)-$NEAR_BYTES-$shape.jsonl"
      if [ ! -s "$near" ]; then
        python3 - "$near" "$NEAR_BYTES" "$unit" "$shape" <<'PY'
import json, sys
path, size, unit, shape = sys.argv[1], int(sys.argv[2]), sys.argv[3].replace("\\n", "\n"), sys.argv[4]
each = size if shape == "one" else int(shape)
text = (unit * (each // len(unit) + 1))[:each]
with open(path, "w") as f:
    for i in range(max(1, size // each)):
        traj = {"schema_version": "1.5.0", "id": f"near-match-{i}", "content": [
            {"class_": "text_observation", "content": "Print the log.", "name": None, "source": "user"},
            {"class_": "message_action", "content": text, "description": None}], "details": {}}
        f.write(json.dumps(traj) + "\n")
PY
      fi
      SIZE=$(stat -L -c %s "$near")
      line=$(timed "$BIN" redact -q "$near" -o "$BENCH_DIR/out.jsonl")
      # (backslashes doubled: awk -v reads escapes)
      if [ "$shape" = one ]; then what="one message"; else what="1 MB each"; fi
      show "redact near matches, $what: ${unit//\\/\\\\}" "$line"
      awk -v n="  speed over the ADP input's" -v a="$CORPUS_SIZE" -v t="$corpus_secs" -v b="$SIZE" \
        -v s="${line% *}" 'BEGIN { printf "%-46s %.2f\n", n, (s > 0 && a > 0 ? (b / s) / (a / t) : 0) }'
      rm -f "$BENCH_DIR/out.jsonl"
    done
  done
  SIZE=$CORPUS_SIZE
  if [ "$BENCH_ONLY" = redact ]; then
    exit 0
  fi
fi

if [ "$BENCH_ONLY" != seeds ] && [ "$BENCH_ONLY" != agents ]; then
  REWARDS="$BENCH_DIR/rewards-$BYTES-1000000.jsonl"
  if [ ! -s "$REWARDS" ]; then
    "$TARGET"/release/examples/gen_bench_rewards "$INPUT" "$REWARDS" 1000000 2>/dev/null
  fi
  report "join --rewards (1M records, generic)" "$BIN" join -q "$INPUT" --rewards "$REWARDS" \
    --key /id --value /reward --outcome /resolved --components /components -o "$BENCH_DIR/out.jsonl"
  if [ "$BENCH_ONLY" = join ]; then
    rm -f "$BENCH_DIR/out.jsonl"
    exit 0
  fi

  report "validate" "$BIN" validate -q "$INPUT"
  rm -f "$BENCH_DIR/out.jsonl"
  report "convert --from adp" "$BIN" convert -q --from adp "$INPUT" -o "$BENCH_DIR/out.jsonl"
  report "stats" "$BIN" stats "$INPUT"
  report "report (HTML page)" "$BIN" report -q "$INPUT" -o "$BENCH_DIR/report.html"
  rm -f "$BENCH_DIR/out.jsonl"
  rm -f "$BENCH_DIR/out.jsonl"
fi

# Seed formats: generated from a directory of shapes, converted to a file.
seed() {
  local name="$1" format="$2" shapes="$3"
  local input="$BENCH_DIR/$name-$((BYTES / 4)).jsonl"
  if [ ! -s "$input" ]; then
    "$TARGET"/release/examples/gen_bench_input "$input" "$((BYTES / 4))" "$shapes" 2>/dev/null
  fi
  SIZE=$(stat -L -c %s "$input")
  # Not timed: dropping the previous case's output from the page cache.
  rm -f "$BENCH_DIR/out.jsonl"
  report "convert --from $format ($name)" "$BIN" convert -q --from "$format" "$input" -o "$BENCH_DIR/out.jsonl"
}
if [ "$BENCH_ONLY" != agents ]; then
  seed memabra-samples memabra sample_data/memabra
  seed reflexion-samples reflexion sample_data/reflexion
  # LedgerMind events shaped like the sample store, each round of copies in sessions of its own.
  seed ledgermind-samples ledgermind sample_data/ledgermind
  REAL=../shared/corpus/seeds/aiwg/examples/reflections-example-001.json
  if [ -f "$REAL" ]; then
    mkdir -p "$BENCH_DIR/reflexion-real-shape"
    cp "$REAL" "$BENCH_DIR/reflexion-real-shape/"
    seed reflexion-real reflexion "$BENCH_DIR/reflexion-real-shape"
  fi
  # Declarative converters: records shaped like the corpus samples of a few shipped specs.
  for spec in agenttuning_os codeactinstruct synatra omniact android_in_the_wild; do
    RAW=../shared/corpus/adp/$spec/sample_raw.json
    if [ -f "$RAW" ]; then
      mkdir -p "$BENCH_DIR/spec-$spec"
      cp "$RAW" "$BENCH_DIR/spec-$spec/"
      seed "spec-$spec" "$spec" "$BENCH_DIR/spec-$spec"
    fi
  done
fi
# Agent logs: a directory of 1 MB session files per format, shaped like the bundled sample
# (a file is a session, or for Inspect AI a log of samples; MB/s of all the files), and when the
# shared corpus is beside the checkout, also shaped like its real logs of the format.
sessions() {
  local format="$1" shape="$2" shapes="$3"
  local dir="$BENCH_DIR/sessions-$format-$shape-$((BYTES / 4))"
  if [ ! -d "$dir" ]; then
    "$TARGET"/release/examples/gen_bench_input "$dir" "$((BYTES / 4))" "$shapes" sessions 2>/dev/null
  fi
  SIZE=$(du -sb "$dir" | cut -f1)
  rm -f "$BENCH_DIR/out.jsonl"
  report "convert --from $format ($format-$shape)" "$BIN" convert -q --from "$format" "$dir" -o "$BENCH_DIR/out.jsonl"
}
for format in codex claude-code gemini-cli mini-swe-agent inspect atif pi droid kimi-cli aider qwen-code copilot-cli cursor letta-code; do
  sessions "$format" samples "sample_data/$format"
  if [ -d "../shared/corpus/agent-logs/$format" ]; then
    sessions "$format" corpus "../shared/corpus/agent-logs/$format"
  fi
done
# SQLite stores: one store of BYTES/4, the shape store's sessions repeated with their prose
# varied (gen_bench_input's `store` mode); MB/s of the store, sessions/s from the trajectories.
store() {
  local format="$1" name="$2" shape="$3"
  local db="$BENCH_DIR/store-$name-$((BYTES / 4)).db"
  if [ ! -s "$db" ]; then
    "$TARGET"/release/examples/gen_bench_input "$db" "$((BYTES / 4))" "$shape" store 2>/dev/null
  fi
  SIZE=$(stat -L -c %s "$db")
  rm -f "$BENCH_DIR/out.jsonl"
  report "convert --from $format ($name)" "$BIN" convert -q --from "$format" "$db" -o "$BENCH_DIR/out.jsonl"
  echo "  sessions: $(wc -l < "$BENCH_DIR/out.jsonl")"
}
store crush crush-samples sample_data/crush/crush.db
store opencode opencode-samples sample_data/opencode/opencode.db
if [ -f ../shared/corpus/agent-logs/crush/swift-kdl__crush.db ]; then
  store crush crush-corpus ../shared/corpus/agent-logs/crush/swift-kdl__crush.db
fi
store hermes hermes-samples sample_data/hermes/sessions.jsonl
if [ -f ../shared/corpus/agent-logs/hermes/hermes-trading-agent__state.db ]; then
  store hermes hermes-corpus ../shared/corpus/agent-logs/hermes/hermes-trading-agent__state.db
fi
store goose goose-samples sample_data/goose/sessions.db
rm -f "$BENCH_DIR/out.jsonl"
