#!/usr/bin/env bash
# Every check and test, as CI runs them: lints, the Rust unit/property/doc tests, then
# pytest (with the examples in the package's docstrings).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh test,bench
cargo fmt --check
cargo clippy --all-targets --features python -- -D warnings
.venv/bin/ruff check python tests benches
.venv/bin/ruff format --check python tests benches
cargo test
.venv/bin/python -m pytest tests python/merge_core --doctest-modules "$@"
