#!/usr/bin/env bash
# The main job: set up, then run `merge-core demo` on generated data.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/merge-core demo "$@"
