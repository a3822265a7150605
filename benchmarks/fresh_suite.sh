#!/usr/bin/env bash
# The README's test command's pytest part (`python -m pytest -q`) as a new user meets it: in a fresh clone of this
# checkout's HEAD, with an empty home (HOME=$(mktemp -d): no ~/.cache/coatsearch, no torch or inductor caches), no
# COATSEARCH_CACHE or TORCHINDUCTOR_* variables, started as a background job (`cmd &`: SIGINT ignored, stdin not a
# terminal), and the clone's own package first on the path (an editable install elsewhere does not hide it).
#
# Usage: benchmarks/fresh_suite.sh [PYTEST ARGS...]   e.g. benchmarks/fresh_suite.sh tests/repo -m "not slow"
# With no arguments it runs the whole suite (minutes of every core: not on a machine whose cores are busy).
# Prints the clone, the home and pytest's summary; exits with pytest's status. Set KEEP=1 to keep the clone.
set -euo pipefail

src=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)
work=$(mktemp -d "${TMPDIR:-/tmp}/coatsearch-fresh-XXXXXX")
home=$(mktemp -d "${TMPDIR:-/tmp}/coatsearch-home-XXXXXX")
cleanup() { [ "${KEEP:-0}" = 1 ] || rm -rf "$work" "$home"; }
trap cleanup EXIT

git clone --quiet --no-hardlinks "$src" "$work/coatsearch"
echo "fresh_suite: clone $work/coatsearch at $(git -C "$work/coatsearch" rev-parse --short HEAD); HOME=$home"

cd "$work/coatsearch"
(
    unset COATSEARCH_CACHE TORCHINDUCTOR_CACHE_DIR TORCHINDUCTOR_COMPILE_THREADS TRITON_CACHE_DIR XDG_CACHE_HOME
    export HOME="$home" PYTHONPATH="$work/coatsearch"
    python -m pytest -q -p no:cacheprovider "$@" </dev/null >"$work/pytest.log" 2>&1 &
    wait $!
) && rc=0 || rc=$?
tail -n 15 "$work/pytest.log"
echo "fresh_suite: pytest exit status $rc"
exit "$rc"
