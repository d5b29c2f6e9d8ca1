#!/usr/bin/env bash
# Rendering + tokenizing speed: `trajkit export --to tokens` against transformers'
# apply_chat_template on the same trajectories, with the same template and tokenizer, for each
# tokenizer given.
#
#   TOKENIZERS="path/a/tokenizer.json path/b/tokenizer.json" PYTHON=/path/to/venv/bin/python \
#     scripts/bench-tokens.sh [LOG_DIR...]
#
# The input is real agent sessions, none repeated: each LOG_DIR (default: every folder of
# ../shared/corpus/agent-logs) converted to ADP by `trajkit convert`. TOKENIZERS names real
# `tokenizer.json` files (from packages that ship them, or built offline from shipped
# vocabularies; nothing is downloaded); unset, the model-family shapes that
# tests/training/build_tokenizers.py trains on the sessions' text stand in for them. TEMPLATE
# is the chat template (default tests/fixtures/templates/generation.jinja: masks from
# {% generation %} blocks, as transformers computes them). PYTHON needs transformers and
# tokenizers. For each tokenizer: which encoder trajkit takes (its own or the library's), both
# wall and CPU times (trajkit's whole process with the default threads, transformers' loop on
# one core as it runs), the ratios and trajkit's tokens per second. On a shared machine compare
# the CPU times: wall times there measure the other work. Then what counting tokens costs
# `trajkit run` with the first tokenizer: a pipeline with a parquet and an openai export, timed
# without and with `chat_template`/`tokenizer` on both exports (the median of RUNS runs each,
# default 3, in turns).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
TRAJKIT="${TRAJKIT_BIN:-target/release/trajkit}"
DIR="${BENCH_DIR:-${TMPDIR:-/tmp}/trajkit-bench-tokens}"
TEMPLATE="${TEMPLATE:-tests/fixtures/templates/generation.jinja}"
case "$TEMPLATE" in /*) ;; *) TEMPLATE="$PWD/$TEMPLATE" ;; esac
rm -rf "$DIR"
mkdir -p "$DIR/adp"

logs=("$@")
[ ${#logs[@]} -gt 0 ] || logs=(../shared/corpus/agent-logs/*/)
for d in "${logs[@]}"; do
  "$TRAJKIT" convert -q "$d" -o "$DIR/adp/$(basename "$d").jsonl" || true
done
cat "$DIR"/adp/*.jsonl > "$DIR/in.jsonl"
echo "input: $(wc -l < "$DIR/in.jsonl") sessions, $(du -h "$DIR/in.jsonl" | cut -f1) of ADP"
"$TRAJKIT" export -q --to hf -o "$DIR/hf" "$DIR/in.jsonl" || true

read -r -a tokenizers <<< "${TOKENIZERS:-}"
if [ ${#tokenizers[@]} -eq 0 ]; then
  "$PYTHON" tests/training/build_tokenizers.py "$DIR/tok" "$DIR"/hf/data/*.jsonl
  tokenizers=("$DIR"/tok/{deepseek,qwen2,llama3,o200k,mistral}.json)
fi

for tok in "${tokenizers[@]}"; do
  out="$DIR/tokens-$(echo "$tok" | md5sum | cut -c1-8)"
  # Wall and CPU time (user + system) of the whole trajkit process.
  read -r trajkit tcpu <<< "$("$PYTHON" - "$DIR/stderr" "$TRAJKIT" export --no-progress \
    --to tokens -o "$out" --chat-template "$TEMPLATE" --tokenizer "$tok" "$DIR/in.jsonl" <<'PY'
import resource, subprocess, sys, time
start = time.perf_counter()
with open(sys.argv[1], "w") as err:
    subprocess.run(sys.argv[2:], stderr=err)
wall = time.perf_counter() - start
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"{wall:.3f} {usage.ru_utime + usage.ru_stime:.3f}")
PY
)"
  encoder=$(sed -n 's/^trajkit: --tokenizer [^:]*: //p' "$DIR/stderr" | head -1)
  tokens=$(grep -oE '[0-9]+ tokens' "$DIR/stderr" | head -1 | cut -d' ' -f1)
  read -r ptime prows ptokens pcpu <<< "$("$PYTHON" - "$DIR/hf" "$TEMPLATE" "$tok" <<'PY'
import json, sys, time
from pathlib import Path
import transformers
from transformers import PreTrainedTokenizerFast
transformers.logging.set_verbosity_error()
hf, template, tokenizer = sys.argv[1], Path(sys.argv[2]).read_text(), sys.argv[3]
rows = [json.loads(l) for p in sorted(Path(hf, "data").glob("*.jsonl")) for l in p.open() if l.strip()]
tok = PreTrainedTokenizerFast(tokenizer_file=tokenizer)
start, cpu = time.perf_counter(), time.process_time()
n = 0
for r in rows:
    out = tok.apply_chat_template(r["messages"], tools=r["tools"], chat_template=template, tokenize=True,
                                  return_dict=True, return_assistant_tokens_mask=True)
    n += len(out["input_ids"])
print(f"{time.perf_counter() - start:.3f} {len(rows)} {n} {time.process_time() - cpu:.3f}")
PY
)"
  echo "$tok: $encoder"
  echo "  trajkit export --to tokens (load, read, convert, render, tokenize, write): ${trajkit}s" \
    "(CPU ${tcpu}s), $tokens tokens, $(echo "$tokens / $trajkit" | bc) tokens/s"
  echo "  transformers apply_chat_template (render, tokenize, masks; $prows rows, $ptokens tokens):" \
    "${ptime}s (CPU ${pcpu}s)"
  echo "  ratio: $(echo "scale=1; $ptime / $trajkit" | bc)x wall," \
    "$(echo "scale=1; $pcpu / $tcpu" | bc)x CPU"
done

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
write_run run-counting "chat_template = \"$TEMPLATE\"
tokenizer = \"$(realpath "${tokenizers[0]}")\""
RUNS="${RUNS:-3}"
plain=() counting=()
for _ in $(seq "$RUNS"); do
  plain+=("$(time_run run-plain)")
  counting+=("$(time_run run-counting)")
done
without=$(printf '%s\n' "${plain[@]}" | median)
with=$(printf '%s\n' "${counting[@]}" | median)
echo "counting tokens in run with ${tokenizers[0]} (median of $RUNS runs each):" \
  "${without} s without, ${with} s with, $(echo "scale=2; $with / $without" | bc)x"
