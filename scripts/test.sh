#!/usr/bin/env bash
# Every check and test, as CI runs them: lints, pytest (with the examples in the package's
# docstrings), then the Rust unit/property/doc tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh test,bench
# The quick lints first.
cargo fmt --check
.venv/bin/ruff check python tests benches
.venv/bin/ruff format --check python tests benches
# Two pytest workers (pytest-xdist), each taking a whole test file at a time: a file's
# module fixtures (a Spark cluster, a built wheel) are made once, in one process. (Not
# --dist loadgroup: xdist 3.8 cannot rename test ids under pytest 9.2, so its groups
# are silently ignored.) pytest runs before the Rust tests: the cluster tests build
# merge-core's wheel with maturin, in the environment setup.sh built the extension in, so
# cargo reuses that build; after the Rust tests (other pyo3 settings, below) it would
# compile pyo3 and the crate again (about 5 min here). Files are handed out in the order
# tests/conftest.py gives them (the longest first), not xdist's default of the files with
# the most tests first (--no-loadscope-reorder).
.venv/bin/python -m pytest tests python/merge_core --doctest-modules -n "${PYTEST_WORKERS:-2}" --dist loadfile \
    --no-loadscope-reorder "$@"
# The Rust tests build in the profile and with the features of the extension setup.sh
# built (release, python), so they reuse every dependency it compiled; pyo3 finds the
# .venv's interpreter, as under maturin. clippy lints the crate's own targets as they
# compile (scripts/clippy-lint.sh, warnings denied), instead of a check build of its own.
rust_env=(env PYO3_PYTHON="$PWD/.venv/bin/python" RUSTC_WORKSPACE_WRAPPER="$PWD/scripts/clippy-lint.sh")
echo "building and linting the Rust tests ..."
"${rust_env[@]}" cargo test --release --features python --all-targets --no-run --quiet
"${rust_env[@]}" cargo test --release --features python --quiet
