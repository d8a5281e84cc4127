#!/usr/bin/env bash
# Creates .venv (if missing) and builds merge-core into it in release mode, with the test
# tools and the peers `merge-core bench` compares with.
# Safe to run again: it only rebuilds what changed.
# Prints one line per step; what the tools print goes to .venv/logs/setup.log, whose end
# is shown (and whose path is named) if a step fails.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
mkdir -p .venv/logs
log=.venv/logs/setup.log
: >"$log"

# step "what" command...: runs the command with its output in the log, on one line of ours.
step() {
    local what=$1 start=$SECONDS status=0
    shift
    printf '%s ... ' "$what"
    echo "== $what: $*" >>"$log"
    "$@" >>"$log" 2>&1 || status=$?
    if [ "$status" -ne 0 ]; then
        echo "FAILED (exit status $status)"
        echo "---- the end of $log:"
        tail -n 30 "$log"
        echo "---- the full log: $PWD/$log"
        exit "$status"
    fi
    echo "done ($((SECONDS - start)) s)"
}

[ -x .venv/bin/python ] || step "creating .venv with $python" "$python" -m venv .venv
step "updating pip and maturin in .venv" .venv/bin/python -m pip install --upgrade pip "maturin>=1.5,<2"
step "building merge-core (release) into .venv, with its test and benchmark tools" \
    env VIRTUAL_ENV="$PWD/.venv" .venv/bin/maturin develop --release --extras test,bench
step "checking that merge-core imports" .venv/bin/python -c "import merge_core"
