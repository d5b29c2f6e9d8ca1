#!/usr/bin/env bash
# The Python package's tests (docs/python.md): builds the wheel with maturin (reusing
# target/release: run after `cargo build --release --locked` or the tests), installs it into a
# fresh virtual environment, runs the sample pipeline with the `trajkit` the wheel installed,
# then adds Ray, pyarrow and `datasets` and runs tests/python (the Ray driver on a local Ray).
# .ci/run calls it; a developer can too. Needs python3 (3.11 or newer) and PyPI.
set -euo pipefail
cd "$(dirname "$0")/.."
TARGET="${CARGO_TARGET_DIR:-target}"
case "$TARGET" in /*) ;; *) TARGET="$PWD/$TARGET" ;; esac
PIP=(--quiet --disable-pip-version-check)

step() { printf '== python: %s (at %s s)\n' "$*" "$SECONDS"; }

step "build the wheel"
TOOLS="$TARGET/maturin-venv"
[ -x "$TOOLS/bin/maturin" ] || {
  python3 -m venv "$TOOLS"
  "$TOOLS/bin/pip" install "${PIP[@]}" maturin==1.16.0
}
rm -rf "$TARGET/wheels"
"$TOOLS/bin/maturin" build --release --locked --quiet --out "$TARGET/wheels"
WHEEL=$(ls "$TARGET"/wheels/trajkit-*.whl)

step "install it into a fresh virtual environment"
VENV="$TARGET/wheel-venv"
rm -rf "$VENV"
python3 -m venv "$VENV"
"$VENV/bin/pip" install "${PIP[@]}" "$WHEEL"

step "run the sample pipeline with the wheel's trajkit"
"$VENV/bin/trajkit" run -q sample_data/pipeline.toml

step "add Ray, pyarrow and datasets; the package and Ray driver tests"
"$VENV/bin/pip" install "${PIP[@]}" ray==2.60.0 pyarrow==26.0.1 datasets==5.2.0
HF_HOME="$TARGET/wheel-venv/hf-home" HF_DATASETS_OFFLINE=1 HF_HUB_OFFLINE=1 \
  HF_DATASETS_DISABLE_PROGRESS_BARS=1 RAY_USAGE_STATS_ENABLED=0 \
  "$VENV/bin/python" -m unittest discover -s tests/python -v
step "done"
