#!/usr/bin/env bash
# Whether a change leaves reports unchanged: writes each study's report (report.md, summary.json, PNGs) with the code
# at BASE (a temporary worktree) and with this checkout, into the same folder name, and compares them byte for byte.
#
# Usage: benchmarks/report_identity.sh BASE STUDIES_DIR STUDY...
#   e.g. PYTHONPATH=. python benchmarks/fabricated_studies.py /tmp/fab   (four fabricated studies as journals)
#        benchmarks/report_identity.sh HEAD~1 /tmp/fab fab vit dense meas
# Prints `diff -r`'s output; the last line is `identical=1` (every file the same) or `identical=0`.
set -euo pipefail

base=$1 studies=$(realpath "$2")
shift 2
here=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)
work=$(mktemp -d "${TMPDIR:-/tmp}/coatsearch-identity-XXXXXX")
trap 'git -C "$here" worktree remove --force "$work/tree" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
git -C "$here" worktree add --quiet --detach "$work/tree" "$base"

for side in base head; do
    src=$here
    [ "$side" = base ] && src=$work/tree
    for study in "$@"; do
        (cd "$src" && PYTHONPATH="$src" python -m coatsearch report "$study" --studies-dir "$studies" \
            --reports-dir "$work/reports" >/dev/null 2>"$work/stderr") || { cat "$work/stderr"; exit 1; }
    done
    mv "$work/reports" "$work/$side"
done
if diff -r "$work/base" "$work/head"; then echo "identical=1"; else echo "identical=0"; fi
