# step <seconds> <title> <command...>: one step of a GPU checklist script (gpu_checklist.sh,
# gpu_speed.sh), sourced by them; needs $log. The step runs under its own time limit, so one slow
# step cannot take the others' time, and its exit status and seconds go to the log.
# STEP_LIMIT_SCALE (an integer, default 1) multiplies every limit (a dry run on a slow CPU).
step() {
    local limit=$(( $1 * ${STEP_LIMIT_SCALE:-1} )) title=$2; shift 2
    echo "=== $title ($(date -u +%H:%M:%S), limit ${limit}s): $*" | tee -a "$log"
    local t0=$SECONDS
    timeout --signal=INT --kill-after=15 "$limit" "$@" 2>&1 | tee -a "$log"
    echo "=== $title: exit ${PIPESTATUS[0]} after $((SECONDS - t0)) s" | tee -a "$log"
}
