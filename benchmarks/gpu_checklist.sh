#!/usr/bin/env bash
# The GPU checklist (docs/gpu.md): every GPU figure Pacebench owes, in one call of at most 10 minutes
# on one H100 or H200. Run from the repository root on a CUDA machine whose python3 has torch:
#
#   bash benchmarks/gpu_checklist.sh [OUT]      (OUT: folder for the log and the store; default gpu-out)
#
# Needs: the tiny-Shakespeare text under $PACEBENCH_DATA/tinyshakespeare/input.txt, and this
# project's dependencies beyond torch importable (duckdb at least). Each step has its own time
# limit, so one slow step cannot take the others' time; a step that fails is reported and the
# next one runs.
set -u
out=${1:-gpu-out}
mkdir -p "$out"
py=${PYTHON:-python3}
log="$out/checklist.log"
source "$(dirname "$0")/gpu_step.sh"  # step <seconds> <title> <command...>
nadamw='{"learning_rate": 0.002, "one_minus_beta1": 0.1, "beta2": 0.99, "weight_decay": 0.1, "warmup_factor": 0.05, "grad_clip": null}'
store="$out/store"

step 20 "machine" bash -c "nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv; $py -c 'import torch, duckdb; print(\"torch\", torch.__version__, \"duckdb\", duckdb.__version__)'"
step 60 "GPU tests" $py -m pytest -q -p no:cacheprovider -m gpu tests/test_device.py
step 80 "MFU, ladder rung gpt_28m (9 x 512, generated corpus), kernel profile" \
    $py benchmarks/throughput.py --workload gpt_28m --device cuda --precision bf16 --compile --profile
step 90 "MFU, ladder rung gpt_113m (16 x 768, generated corpus)" \
    $py benchmarks/throughput.py --workload gpt_113m --device cuda --precision bf16 --compile
step 170 "noise floor, 4 seeds, shakespeare_char_gpu (bf16, compiled, cold compiler per run)" \
    $py -m runners.cli noise --workload shakespeare_char_gpu --algorithm nadamw --hparams "$nadamw" --seeds 4 --device cuda --precision bf16 --compile --store "$store"
step 45 "study on CUDA: interleaved order, machine speed" \
    $py -m runners.cli study --workloads digits_cnn --algorithms adamw,nadamw --trials 2 --workers 2 --device cuda --store "$store"
step 90 "runner overhead, digits_cnn" \
    $py benchmarks/overhead.py --workload digits_cnn --device cuda --precision bf16 --compile --steps 1000 --rounds 3
step 60 "compile time on the clock, two cold runs" \
    $py benchmarks/compile_time.py --workload shakespeare_char_gpu --device cuda --precision bf16 --runs 2
step 30 "what the runs recorded" $py - "$store" <<'PY'
import sys
import workbench
runs = workbench.open(sys.argv[1]).runs()
cols = [c for c in ("algorithm", "workload", "trial", "seed", "status", "launch_position", "steps",
                    "train_seconds", "time_to_target", "step_to_target", "compile_seconds",
                    "compile_cache", "mfu", "stalled_at_step") if c in runs.columns]
print(runs[cols].to_string(max_colwidth=20))
PY
tar czf "$out/store.tar.gz" -C "$out" store && rm -rf "$store"  # the runs, for the dashboard
