#!/usr/bin/env bash
# The GPU speed checks of issue 33 (docs/gpu.md), the second call of the GPU checklist: at most
# 10 minutes on one H100 or H200. Run from the repository root on a CUDA machine whose python3 has
# torch and duckdb:
#
#   bash benchmarks/gpu_speed.sh [OUT]     (OUT: folder for the log and the store; default gpu-speed)
#
# 1. steady MFU of the 512-wide GPU language workload under each torch.compile mode (goal >= 40 %
#    in bf16) and of a 1024-wide one (goal >= 50 %), with the host syncs counted in the timed steps;
# 2. set-targets' estimate on the GPU workload, then (the time left permitting) the procedure
#    itself, small: 2 tuning trials and 2 reruns, two at a time on the one GPU.
# WIDE512 and WIDE1024 name the workloads (catalog names or ladder rungs; default gpt_28m, 9 x 512,
# and, the ladder having no 1024-wide rung, gpt_28m resized to 12 x 1024); each step has its own
# limit, so one slow step cannot take the others' time.
set -u
out=${1:-gpu-speed}
mkdir -p "$out"
py=${PYTHON:-python3}
log="$out/speed.log"
wide512=${WIDE512:-gpt_28m}
wide1024=${WIDE1024:-}
source "$(dirname "$0")/gpu_step.sh"  # step <seconds> <title> <command...>
mfu() { $py benchmarks/throughput.py --device cuda --precision bf16 --compile --steps 50 --warmup 15 --rounds 3 "$@"; }

step 70 "MFU, $wide512, compile default" mfu --workload "$wide512"
step 90 "MFU, $wide512, compile max-autotune-no-cudagraphs" mfu --workload "$wide512" --compile-mode max-autotune-no-cudagraphs
step 70 "MFU, $wide512, compile reduce-overhead (CUDA graphs)" mfu --workload "$wide512" --compile-mode reduce-overhead
if [ -n "$wide1024" ]; then
    step 90 "MFU, $wide1024, compile default" mfu --workload "$wide1024"
else
    step 90 "MFU, $wide512 resized to 12 x 1024" mfu --workload "$wide512" --n-layer 12 --n-embd 1024 --n-head 16
fi
step 40 "set-targets estimate, $wide512" \
    $py -m runners.cli set-targets --workload "$wide512" --algorithm nadamw --trials 2 --reruns 2 --workers 2 --device cuda --precision bf16 --compile --estimate-only
step 240 "set-targets, $wide512 (2 trials, 2 reruns)" \
    $py -m runners.cli set-targets --workload "$wide512" --algorithm nadamw --trials 2 --reruns 2 --workers 2 --device cuda --precision bf16 --compile --store "$out/store" --out "$out/targets" --quiet
