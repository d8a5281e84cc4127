#!/usr/bin/env bash
# Creates .venv (if missing) and builds merge-core into it in release mode, with the extras
# named by the first argument (default: spark, what the demo needs; test.sh asks for
# test,bench: the test tools and the peers the bench compares with).
# Safe to run again: it only rebuilds what changed.
# Prints one line per step; what the tools print goes to .venv/logs/setup.log, whose end
# is shown (and whose path is named) if a step fails.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
extras=${1:-spark}
mkdir -p .venv/logs
log=.venv/logs/setup.log
: >"$log"

# step "what" command...: runs the command with its output in the log, on one line of ours;
# a long step adds a line every 30 s with the time so far (and the crates compiled).
step() {
    local what=$1 start=$SECONDS status=0 from pid
    shift
    printf '%s ... ' "$what"
    echo "== $what: $*" >>"$log"
    from=$(wc -l <"$log")
    "$@" >>"$log" 2>&1 &
    pid=$!
    trap 'kill "$pid" 2>/dev/null; exit 130' INT TERM
    while kill -0 "$pid" 2>/dev/null; do
        sleep 1
        if (((SECONDS - start) % 30 == 0)) && kill -0 "$pid" 2>/dev/null; then
            printf '\n    %d s so far, crates compiled: %d ... ' "$((SECONDS - start))" \
                "$(tail -n +"$from" "$log" | grep -c '^ *Compiling ' || true)"
        fi
    done
    wait "$pid" || status=$?
    trap - INT TERM
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
step "building merge-core (release) into .venv, with the extras $extras (about 4 min on 2 cores the first time)" \
    env VIRTUAL_ENV="$PWD/.venv" .venv/bin/maturin develop --release --extras "$extras"
step "checking that merge-core imports" .venv/bin/python -c "import merge_core"
