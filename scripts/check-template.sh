#!/usr/bin/env bash
# Checks chat templates against transformers, token for token, on the shared corpus.
#
#   PYTHON=/path/to/venv/bin/python scripts/check-template.sh --tokenizer TOKENIZER.json TEMPLATE...
#
# Each TEMPLATE is a Jinja file or a tokenizer_config.json (its chat_template and special
# tokens). The input is the shared corpus's ADP samples (../shared/corpus/adp/*/sample_std.json,
# ids made unique), or INPUT (ADP JSON lines). For each template, `trajkit export --to tokens`
# writes the rows and tests/training/compare.py renders and tokenizes the same `hf` rows with
# transformers' apply_chat_template: input_ids and assistant masks must be equal, and every row
# trajkit leaves out (the template raised) must be one transformers cannot render either.
# TOKENIZER is any tokenizer.json that knows the template's special tokens (a model's own);
# the rendering is what is compared. EXPORT_ARGS adds options to both exports (for instance
# "--tools tools.json --system-prompt prompt.txt"). PYTHON needs transformers, tokenizers and
# pyarrow.
# Exits 1 when a template differs.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
TRAJKIT="${TRAJKIT_BIN:-target/release/trajkit}"
DIR="${CHECK_DIR:-${TMPDIR:-/tmp}/trajkit-check-template}"
[ "${1:-}" = "--tokenizer" ] && [ $# -ge 3 ] || {
  echo "usage: $0 --tokenizer TOKENIZER.json TEMPLATE..." >&2
  exit 2
}
TOKENIZER=$(realpath "$2")
shift 2
rm -rf "$DIR"
mkdir -p "$DIR"
INPUT="${INPUT:-}"
if [ -z "$INPUT" ]; then
  INPUT="$DIR/in.jsonl"
  "$PYTHON" - "$INPUT" ../shared/corpus/adp/*/sample_std.json <<'PY'
import json, sys
from pathlib import Path
out, files = sys.argv[1], sys.argv[2:]
with open(out, "w", encoding="utf-8") as w:
    for f in files:
        data = json.loads(Path(f).read_text(encoding="utf-8"))
        for k, t in enumerate(data if isinstance(data, list) else [data]):
            t = dict(t, id=f"{Path(f).parent.name}-{k}-{t['id']}")
            w.write(json.dumps(t, ensure_ascii=False) + "\n")
PY
fi
read -r -a args <<< "${EXPORT_ARGS:-}"
"$TRAJKIT" export -q --to hf -o "$DIR/hf" "${args[@]}" "$INPUT" || true
cases="["
n=0
for template in "$@"; do
  n=$((n + 1))
  # Rejected rows (a template that raises) are expected: compare.py checks each.
  "$TRAJKIT" export -q --to tokens -o "$DIR/tokens-$n" --chat-template "$template" \
    --tokenizer "$TOKENIZER" "${args[@]}" "$INPUT" || true
  [ $n -gt 1 ] && cases+=","
  cases+="{\"template\": \"$(realpath "$template")\", \"name\": null, \"tokenizer\": \"$TOKENIZER\", \"tokens\": \"$DIR/tokens-$n\"}"
done
echo "$cases]" > "$DIR/cases.json"
"$PYTHON" tests/training/compare.py "$DIR/hf" "$DIR/cases.json" --rendering-only
