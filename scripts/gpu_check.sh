#!/usr/bin/env bash
# The GPU check (≤ 15 minutes on one CUDA GPU): the GPU spec's dry run, a short real sweep, the trial
# batching benchmark, what torch.compile buys, a one-rank FSDP run through NCCL and the GPU-marked tests. Run
# from the repository root with the project installed:
#     bash scripts/gpu_check.sh [OUT_DIR]
# Every step's output goes to stdout and to OUT_DIR (default runs/gpu-check); record the figures in the README.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-${OUT:-runs/gpu-check}}
mkdir -p "$out"
if ! python -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"; then
    echo "error: no CUDA device visible to torch; run this on a GPU machine" >&2
    exit 2
fi
python -c "import torch; print(torch.__version__, torch.cuda.get_device_name(0))" | tee "$out/device.txt"
step() {  # step NAME SECONDS COMMAND...: run with a time limit, log to OUT/NAME.log, report the status
    local name=$1 limit=$2
    shift 2
    echo "== $name (limit ${limit}s): $*"
    local start=$SECONDS
    timeout "$limit" "$@" 2>&1 | tee "$out/$name.log"
    echo "== $name: exit ${PIPESTATUS[0]} after $((SECONDS - start))s" | tee -a "$out/status.txt"
}
step dry_run 90 mutransfer sweep gpu --dry-run
step batching 180 python scripts/bench_batch.py --device cuda --widths 64 128 256 --ks 1 2 4 8 --steps 60
step sweep 210 mutransfer sweep gpu --out "$out/sweep" "widths=[256,512]" search.step=2 train.steps=200 \
    train.eval_every=100 --workers 1
step compile 150 python scripts/bench_compile.py --device cuda --widths 256 --variants eager,model --steps 40
step distributed 120 mutransfer train --nproc 1 train.device=cuda train.parallel=fsdp train.steps=50 model.width=256 \
    --out "$out/distributed"
step gpu_tests 60 python -m pytest -q -m gpu
cat "$out/status.txt"
