#!/usr/bin/env bash
# Creates .venv (if missing) and builds merge-core into it in release mode, with the test
# tools and the peers `merge-core bench` compares with.
# Safe to run again: it only rebuilds what changed.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$python" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q "maturin>=1.5,<2"
VIRTUAL_ENV="$PWD/.venv" .venv/bin/maturin develop --release --extras test,bench 2>&1 | grep -Ev "^\s*(Compiling|Requirement already satisfied)" || true
.venv/bin/python -c "import merge_core" # fail here, clearly, if the build did not land
