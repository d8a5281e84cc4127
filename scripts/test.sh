#!/usr/bin/env bash
# Every test: the Rust unit, property and doc tests, then pytest (with the docs' examples).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo test
.venv/bin/python -m pytest tests python/merge_core --doctest-modules "$@"
