#!/usr/bin/env bash
# Rendering + tokenizing speed: `trajkit export --to tokens` against transformers'
# apply_chat_template on the same trajectories, with the same template and tokenizer.
#
#   PYTHON=/path/to/venv/bin/python scripts/bench-tokens.sh [COPIES]
#
# The input is the shared corpus's ADP samples (../shared/corpus/adp/*/sample_std.json) repeated
# COPIES times (default 40) with fresh ids. The tokenizer is the byte-level BPE that
# tests/training/build_tokenizers.py trains on that text, the template
# tests/fixtures/templates/generation.jinja (masks from {% generation %} blocks, as transformers
# computes them). PYTHON needs transformers and tokenizers. Prints both wall times (trajkit's
# with the default threads, transformers' on one core as it runs) and the ratio; then what
# counting tokens costs `trajkit run`: a pipeline over the same input with a parquet and an
# openai export, timed without and with `chat_template`/`tokenizer` on both exports (the median
# of RUNS runs each, default 5, in turns).
set -euo pipefail
cd "$(dirname "$0")/.."
COPIES="${1:-40}"
PYTHON="${PYTHON:-python3}"
TRAJKIT="${TRAJKIT_BIN:-target/release/trajkit}"
DIR="${BENCH_DIR:-${TMPDIR:-/tmp}/trajkit-bench-tokens}"
TEMPLATE=tests/fixtures/templates/generation.jinja
rm -rf "$DIR"
mkdir -p "$DIR"

"$PYTHON" - "$DIR/in.jsonl" "$COPIES" ../shared/corpus/adp/*/sample_std.json <<'PY'
import json, sys
out, copies, files = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
trajectories = []
for f in files:
    data = json.load(open(f, encoding="utf-8"))
    trajectories.extend(data if isinstance(data, list) else [data])
with open(out, "w", encoding="utf-8") as w:
    for c in range(copies):
        for t in trajectories:
            t = dict(t, id=f"{t['id']}-{c}")
            w.write(json.dumps(t, ensure_ascii=False) + "\n")
PY
echo "input: $(wc -l < "$DIR/in.jsonl") trajectories, $(du -h "$DIR/in.jsonl" | cut -f1)"

"$TRAJKIT" export -q --to hf -o "$DIR/hf" "$DIR/in.jsonl" || true
"$PYTHON" tests/training/build_tokenizers.py "$DIR/tok" "$DIR"/hf/data/*.jsonl

start=$(date +%s.%N)
"$TRAJKIT" export -q --to tokens -o "$DIR/tokens" --chat-template "$TEMPLATE" \
  --tokenizer "$DIR/tok/bytelevel.json" "$DIR/in.jsonl" || true
end=$(date +%s.%N)
trajkit=$(echo "$end - $start" | bc)

python_time=$("$PYTHON" - "$DIR/hf" "$TEMPLATE" "$DIR/tok/bytelevel.json" <<'PY'
import json, sys, time
from pathlib import Path
import transformers
from transformers import PreTrainedTokenizerFast
transformers.logging.set_verbosity_error()
hf, template, tokenizer = sys.argv[1], Path(sys.argv[2]).read_text(), sys.argv[3]
rows = [json.loads(l) for p in sorted(Path(hf, "data").glob("*.jsonl")) for l in p.open() if l.strip()]
tok = PreTrainedTokenizerFast(tokenizer_file=tokenizer)
start = time.perf_counter()
n = 0
for r in rows:
    out = tok.apply_chat_template(r["messages"], tools=r["tools"], chat_template=template, tokenize=True,
                                  return_dict=True, return_assistant_tokens_mask=True)
    n += len(out["input_ids"])
print(f"{time.perf_counter() - start:.3f} {len(rows)} {n}")
PY
)
read -r ptime prows ptokens <<< "$python_time"
echo "trajkit export --to tokens (read, convert, render, tokenize, write): ${trajkit}s"
echo "transformers apply_chat_template (render, tokenize, masks; $prows rows, $ptokens tokens): ${ptime}s"
echo "ratio: $(echo "scale=1; $ptime / $trajkit" | bc)x"

# `trajkit run` with a parquet and an openai export, without and with token counts on both.
# write_run NAME KEYS writes the pipeline; time_run NAME prints one run's wall time in seconds.
write_run() {
  local name=$1 keys=$2
  cat > "$DIR/$name.toml" <<TOML
[[input]]
path = "$DIR/in.jsonl"
format = "adp"

[[export]]
to = "parquet"
output = "$DIR/$name/parquet"
$keys
[[export]]
to = "openai"
output = "$DIR/$name/openai"
$keys
TOML
}
time_run() {
  local name=$1 start end
  rm -rf "${DIR:?}/$name"
  start=$(date +%s.%N)
  "$TRAJKIT" run -q "$DIR/$name.toml" || true
  end=$(date +%s.%N)
  echo "$end - $start" | bc
}
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
write_run run-plain ""
write_run run-counting "chat_template = \"$PWD/$TEMPLATE\"
tokenizer = \"$DIR/tok/bytelevel.json\""
# Runs of a third of a second vary by a few hundredths: five of each, in turns, and the medians.
RUNS="${RUNS:-5}"
plain=() counting=()
for _ in $(seq "$RUNS"); do
  plain+=("$(time_run run-plain)")
  counting+=("$(time_run run-counting)")
done
without=$(printf '%s\n' "${plain[@]}" | median)
with=$(printf '%s\n' "${counting[@]}" | median)
echo "counting tokens in run (median of $RUNS runs each): ${without} s without, ${with} s with, $(echo "scale=2; $with / $without" | bc)x"
