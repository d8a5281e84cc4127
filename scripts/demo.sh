#!/usr/bin/env bash
# The main job: set up, then run `merge-core demo` on generated data. Logs (the build's,
# Spark's) go to .venv/logs/; a failing step names its log.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh spark
MERGE_CORE_LOG_DIR="$PWD/.venv/logs" .venv/bin/merge-core demo "$@"
