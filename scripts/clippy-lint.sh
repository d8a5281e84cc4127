#!/usr/bin/env bash
# The workspace wrapper test.sh compiles the crate's own targets with: clippy's driver,
# warnings denied. So the lints ride on the release build the tests use, and no
# dependency is compiled a second time in check mode for them.
exec clippy-driver "$@" -D warnings
