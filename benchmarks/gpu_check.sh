#!/usr/bin/env bash
# The GPU checks as one prepared run on the CUDA machine (/work/shared/GPU.md describes it):
# the CUDA tests, the CUDA benchmarks (img/s and fraction of bf16 peak per paper_layouts candidate at the
# `full` profile's batch size; fit vs a bare loop) and a short `full`-profile study end to end.
#
# Carry (ignored folders of the checkout): .whl/ (optuna and its dependencies as cp312 wheels, see GPU.md)
# and .data/fashion-mnist/ (the four IDX files). Every figure is also written under $OUT (default
# ./gpu-check). Each phase has its own time limit, so one slow phase cannot eat the device time of the rest:
#
#   bash benchmarks/gpu_check.sh            # about 8-10 minutes on one H200
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-gpu-check}"
mkdir -p "$out"
export PYTHONPATH="$PWD"
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH="/tmp/site:$PWD"
fi
[ -d .data/fashion-mnist ] && export COATSEARCH_DATA="$PWD/.data"
export COATSEARCH_CACHE="$out/cache" # the shared compile cache of this run (and its workers)

phase() {  # phase NAME SECONDS COMMAND...: run with a limit, tee to $out/NAME.txt, say how it ended
  local name=$1 limit=$2
  shift 2
  echo "=== $name (limit ${limit}s): $*"
  local start=$SECONDS
  timeout "$limit" "$@" 2>&1 | tee "$out/$name.txt"
  echo "=== $name: exit ${PIPESTATUS[0]} after $((SECONDS - start)) s" | tee -a "$out/phases.txt"
}

nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv | tee "$out/gpu.txt"
python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)" | tee -a "$out/gpu.txt"
phase test_cuda 240 python3 -m pytest -q -x tests/test_cuda.py -k "not ray" -p no:cacheprovider
phase bench_throughput 180 python3 benchmarks/bench_throughput.py --device cuda --profile full
phase bench_train 90 python3 benchmarks/bench_train.py --device cuda --no-compile
phase study_full 240 python3 -m coatsearch run spaces/paper_layouts.yaml --profile full --device cuda \
  --workers 1 --trials 1 --studies-dir "$out/studies" --no-report --quiet
python3 - "$out/studies" <<'PY' | tee "$out/study_full_record.txt"
import json, sys
from pathlib import Path
for log in Path(sys.argv[1]).glob("*/journal.log"):
    attrs = {}
    for line in log.read_text().splitlines():
        attrs.update(json.loads(line).get("user_attr", {}))
    keys = [k for k in sorted(attrs) if k.endswith((".compile", ".seconds", "eval_acc", "wall_s"))]
    print(log.parent.name, {k: attrs[k] for k in keys})
PY
