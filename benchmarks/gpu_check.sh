#!/usr/bin/env bash
# The GPU checks as one prepared run on a CUDA machine (docs/measurements.md#the-gpu-check), in at most 9 minutes,
# so a 10-minute command limit leaves room and a 15-minute lease leaves time to run it again.
#
# Carried folders (ignored folders of the checkout; nothing else outside the repository is needed):
#   .whl/                 optuna 5, pydantic 2, pydantic-core, annotated-types, typing-inspection, sqlalchemy 2,
#                         alembic, mako, colorlog, greenlet as cp312 manylinux wheels (docs/measurements.md: how)
#   .data/fashion-mnist/  the four Fashion-MNIST IDX files (train/t10k images and labels, gzipped or not)
#
# Phases (each under its own time limit; the limits add up to at most 540 s; benchmarks/gpu_check.py runs them):
#   preflight   30 s  one line and exit 2 when a carried folder, an import or CUDA is missing; else the versions
#                     of torch, CUDA, cuDNN, triton, timm, optuna, pydantic, the GPU and whether MPS runs
#   tests      150 s  the CUDA tests (tests/training/test_cuda.py), but the full-shape ones (next phases) and Ray's
#   throughput  75 s  bench_throughput, 3 candidates at the full profile's batch, eager vs captured: rows of
#                     img/s and fraction of the bf16 peak, `capture_ratio=`, `fraction_of_peak=`
#   capture    150 s  ViT_REL captured and C-T-T-T compiled + captured, 20 steps at the full shapes: mode, fallback
#                     (none), CUDA-graph skips (0), img/s, rel-pos gradient vs the MATH kernel (< 0.05)
#   study      120 s  `coatsearch run spaces/paper_layouts.yaml --profile quick --device cuda --workers auto
#                     --no-plan --trials 8`: `study_s=`
#   summary     15 s  the study's trials from their nested records: device, worker, wall, compile modes,
#                     fallbacks; `processes_per_gpu=`, `aggregate_img_s=`
#
# Output is unbuffered and each row is flushed as measured. $OUT (default ./gpu-check) gets only small text files
# (one per phase, phases.txt); caches, the study and pytest's files go to $GPU_CHECK_WORK (default
# /tmp/coatsearch-gpu-check), never to $OUT.
#
#   bash benchmarks/gpu_check.sh              # on the GPU machine
#   bash benchmarks/gpu_check.sh --dry-run    # on any CPU (CI): the structure, each phase's inputs, no GPU work
set -uo pipefail
cd "$(dirname "$0")/.."
dry=0
[ "${1:-}" = "--dry-run" ] && dry=1
out="${OUT:-gpu-check}"
work="${GPU_CHECK_WORK:-/tmp/coatsearch-gpu-check}"
mkdir -p "$out" "$work"
export PYTHONUNBUFFERED=1 GPU_CHECK_WORK="$work" COATSEARCH_CACHE="$work/cache" \
  TORCHINDUCTOR_CACHE_DIR="$work/inductor" PYTHONPATH="$PWD"
[ -d .data/fashion-mnist ] && export COATSEARCH_DATA="$PWD/.data"

PHASES=(preflight tests throughput capture study summary)
LIMITS=(30 150 75 150 120 15)
total=0
for s in "${LIMITS[@]}"; do total=$((total + s)); done
if [ "$total" -gt 540 ]; then
  echo "gpu_check: the phase limits add up to ${total} s, over 540 s"
  exit 2
fi
echo "gpu_check: ${#PHASES[@]} phases, limits ${LIMITS[*]} s (${total} s in all); out $out, work $work" | tee "$out/phases.txt"

if [ "$dry" = 0 ]; then
  if ! ls .whl/*.whl >/dev/null 2>&1; then
    echo "gpu_check: stop: missing .whl/ (optuna and its dependencies as cp312 wheels: docs/measurements.md#the-gpu-check)" | tee -a "$out/phases.txt"
    exit 2
  fi
  python3 -m pip install -q --no-index --no-deps --target "$work/site" .whl/*.whl >"$work/pip.txt" 2>&1 ||
    { echo "gpu_check: stop: the carried wheels do not install (see $work/pip.txt)" | tee -a "$out/phases.txt"; exit 2; }
  export PYTHONPATH="$work/site:$PWD"
fi

for i in "${!PHASES[@]}"; do
  name=${PHASES[$i]} limit=${LIMITS[$i]}
  start=$SECONDS
  flags=() run_limit=$((limit - 5))
  [ "$dry" = 1 ] && flags=(--dry-run) run_limit=600 # a dry run checks inputs on any CPU, loaded or not
  echo "=== $name (limit ${limit} s)"
  timeout -k 5 "$run_limit" python3 -u benchmarks/gpu_check.py "$name" "${flags[@]}" 2>&1 | tee "$out/$name.txt"
  code=${PIPESTATUS[0]}
  echo "=== $name: exit $code after $((SECONDS - start)) s" | tee -a "$out/phases.txt"
  if [ "$name" = preflight ] && [ "$code" != 0 ]; then
    exit "$code"
  fi
done
echo "gpu_check: done in $SECONDS s" | tee -a "$out/phases.txt"
