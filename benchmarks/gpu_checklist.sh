#!/usr/bin/env bash
# The GPU checklist of issue 43 (docs/gpu.md), in the issue's order: MFU and its profile, the GPU
# ladder (generated corpus, then bytes of real text), `noise` with 4 seeds, `set-targets` (its
# estimate first). Two calls of at most 10 minutes each on one H100 or H200, MFU first, so that a
# 15-minute device budget (start-up included) spends itself in that order and stops where it runs
# out. Run from the repository root on a CUDA machine whose python3 has torch:
#
#   bash benchmarks/gpu_checklist.sh OUT [first|second|extra]
#
#   first  (default; limits add up to 570 s): the machine; steady MFU of the 512-wide rung
#          (gpt_28m) with its kernel profile and of a 1024-wide one (gpt_28m resized to
#          12 x 1024); the GPU ladder on the generated corpus; the same ladder on bytes of text
#          ($BYTES_DATA); both ladders' summaries.
#   second (limits add up to 560 s): `pacebench noise` with 4 seeds on shakespeare_char_gpu;
#          `set-targets` on it, its estimate first.
#   extra  (limits add up to 330 s): issue 33's checks, measured on an H100 on 2026-11-26: the GPU
#          tests, a study on CUDA, runner overhead, compile time on the clock.
#
# OUT gets checklist.log and, at the end of each part, its store as store-PART.tar.gz. Each step
# has its own time limit (gpu_step.sh), so one slow step cannot take the others' time; a step cut
# off by its limit leaves its finished runs (the ladder's unfinished ones read `interrupted`, and
# `--resume` in a later call runs only them). Needs: this project's dependencies beyond torch
# importable (duckdb, mnist1d: wheels, docs/gpu.md), tiny-Shakespeare under
# $PACEBENCH_DATA/tinyshakespeare/input.txt.
#
# Sizes by variable (defaults are the issue's commands trimmed to fit, unmeasured on a GPU):
#   LADDER_SIZES (gpt_1770k,gpt_7m) LADDER_BUDGETS (0.25,0.5,1) LADDER_SEEDS (1)
#   LADDER_WORKERS (4 runs sharing the GPU; whether that beats 1 at a time is unmeasured)
#   BYTES_DATA (bytes:$PACEBENCH_DATA/tinyshakespeare/input.txt: 1 MB, which these rungs repeat;
#   give a larger folder of text when one is at hand)
#   DRY=1: every step of first and second on the CPU with tiny stand-ins (gpt_7k, budget 0.05,
#   synthetic; extra's steps are not scaled down), to check
#   the commands and flags without a GPU (every limit x STEP_LIMIT_SCALE, default 4 then); its
#   figures mean nothing.
set -u
out=${1:-gpu-out}
part=${2:-first}
mkdir -p "$out"
py=${PYTHON:-python3}
log="$out/checklist.log"
source "$(dirname "$0")/gpu_step.sh"  # step <seconds> <title> <command...>
data_root=${PACEBENCH_DATA:-datasets/cache}
store="$out/store-$part"
nadamw='{"learning_rate": 0.002, "one_minus_beta1": 0.1, "beta2": 0.99, "weight_decay": 0.1, "warmup_factor": 0.05, "grad_clip": null}'

if [ "${DRY:-0}" = 1 ]; then  # CPU stand-ins: the same commands and flags, tiny work
    export STEP_LIMIT_SCALE=${STEP_LIMIT_SCALE:-4}  # a slow, shared CPU: longer limits
    device=(--device cpu)
    wide512=gpt_7k; resize=(--n-layer 2 --n-embd 32 --n-head 2)
    mfu_args=(--steps 3 --warmup 1 --rounds 1); profile=()
    sizes=gpt_7k; budgets=0.05; seeds=1; workers=1
    target_workload=synthetic; target_args=(--trials 1 --reruns 2)  # 400-step runs
    noise_args=(--seeds 2)
else
    device=(--device cuda --precision bf16 --compile)
    wide512=gpt_28m; resize=(--n-layer 12 --n-embd 1024 --n-head 16)
    mfu_args=(--steps 50 --warmup 15 --rounds 3); profile=(--profile)
    sizes=${LADDER_SIZES:-gpt_1770k,gpt_7m}; budgets=${LADDER_BUDGETS:-0.25,0.5,1}
    seeds=${LADDER_SEEDS:-1}; workers=${LADDER_WORKERS:-4}
    target_workload=shakespeare_char_gpu; target_args=(--trials 2 --reruns 3)
    noise_args=(--seeds 4 --hparams "$nadamw")
fi
bytes_data=${BYTES_DATA:-bytes:$data_root/tinyshakespeare/input.txt}
ladder=("$py" -m runners.cli ladder --sizes "$sizes" --algorithms adamw,nadamw
        --budgets "$budgets" --seeds "$seeds" --workers "$workers" --store "$store" --quiet)

first() {
    step 20 "machine" bash -c "nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv || echo 'no nvidia-smi'; $py -c 'import torch, duckdb; print(\"torch\", torch.__version__, \"duckdb\", duckdb.__version__, \"cuda\", torch.cuda.is_available())'; date -u"
    step 80 "MFU, $wide512 (512 wide), compile default, kernel profile" \
        "$py" benchmarks/throughput.py --workload "$wide512" "${device[@]}" "${mfu_args[@]}" "${profile[@]}"
    step 90 "MFU, $wide512 resized to ${resize[*]}" \
        "$py" benchmarks/throughput.py --workload "$wide512" "${resize[@]}" "${device[@]}" "${mfu_args[@]}"
    step 20 "GPU ladder plan" "${ladder[@]}" --name gpu-ladder --data generated "${device[@]}" --dry-run
    step 180 "GPU ladder, generated corpus" \
        "${ladder[@]}" --name gpu-ladder --data generated "${device[@]}" --resume
    step 20 "GPU ladder plan, bytes" "${ladder[@]}" --name gpu-ladder-bytes --data "$bytes_data" "${device[@]}" --dry-run
    step 140 "GPU ladder, $bytes_data" \
        "${ladder[@]}" --name gpu-ladder-bytes --data "$bytes_data" "${device[@]}" --resume
    step 20 "ladder summaries" bash -c "$py -m runners.cli ladder --summary --store '$store' --study gpu-ladder; $py -m runners.cli ladder --summary --store '$store' --study gpu-ladder-bytes"
}

second() {
    step 200 "noise floor, ${noise_args[*]:0:2}, $target_workload (cold compiler per run)" \
        "$py" -m runners.cli noise --workload "$target_workload" --algorithm nadamw "${noise_args[@]}" "${device[@]}" --store "$store" --quiet
    step 40 "set-targets estimate, $target_workload" \
        "$py" -m runners.cli set-targets --workload "$target_workload" --algorithm nadamw "${target_args[@]}" --workers 2 "${device[@]}" --estimate-only
    step 300 "set-targets, $target_workload (${target_args[*]})" \
        "$py" -m runners.cli set-targets --workload "$target_workload" --algorithm nadamw "${target_args[@]}" --workers 2 "${device[@]}" --store "$store" --out "$out/targets" --quiet
    step 20 "what the runs recorded" "$py" - "$store" <<'PY'
import os
import sys
import workbench
if not os.path.isdir(sys.argv[1]):
    sys.exit(f"no store at {sys.argv[1]}: no run of this part started")
runs = workbench.open(sys.argv[1]).runs()
cols = [c for c in ("study_name", "algorithm", "workload", "seed", "status", "steps", "train_seconds",
                    "time_to_target", "compile_seconds", "mfu", "hardware") if c in runs.columns]
print(runs[cols].to_string(max_colwidth=24))
PY
}

extra() {
    step 60 "GPU tests" "$py" -m pytest -q -p no:cacheprovider -m gpu tests/test_device.py
    step 45 "study on CUDA: interleaved order, machine speed" \
        "$py" -m runners.cli study --workloads digits_cnn --algorithms adamw,nadamw --trials 2 --workers 2 "${device[@]:0:2}" --store "$store"
    step 90 "runner overhead, digits_cnn" \
        "$py" benchmarks/overhead.py --workload digits_cnn "${device[@]}" --steps 1000 --rounds 3
    step 60 "compile time on the clock, two cold runs" \
        "$py" benchmarks/compile_time.py --workload shakespeare_char_gpu "${device[@]:0:4}" --runs 2
    step 30 "what the runs recorded" "$py" -c "import sys, workbench; print(workbench.open(sys.argv[1]).runs().to_string(max_colwidth=20))" "$store"
}

case "$part" in
    first|second|extra) "$part" ;;
    *) echo "unknown part '$part': valid are first, second, extra" >&2; exit 2 ;;
esac
[ -d "$store" ] && tar czf "$out/store-$part.tar.gz" -C "$out" "store-$part" && rm -rf "$store"
