#!/usr/bin/env bash
# Reuse that does not depend on the study's name (docs/reference.md, "Results never computed
# twice"): the commands and outputs of its example, run in a fresh folder. From the repository
# root:
#
#   bash benchmarks/reuse_by_design.sh [FOLDER]   (FOLDER: where the stores go; default a new one)
#
# AdamW's study `first` in store A; the dry run of study `second` with --reuse-from A (same
# design: every trial; another step cap: the input that differs); `second` launched into B (no
# trial runs); `second` beside `first` in A, scored (each trial counted once); run.json sizes.
set -u
here=$(pwd)
folder=${1:-$(mktemp -d)}
mkdir -p "$folder" && cd "$folder" || exit 1
py=${PYTHON:-$here/.venv/bin/python}
pb() { PYTHONPATH=$here "$py" -m runners.cli "$@"; }
show() { echo "\$ $*"; "$@"; }
study="--workloads synthetic --algorithms adamw --trials 2 --quiet"
show pb study $study --max-steps 20 --name first --store A
echo "\$ pb study $study --max-steps 20 --name second --store B --reuse-from A --dry-run | tail -3"
pb study $study --max-steps 20 --name second --store B --reuse-from A --dry-run | tail -3
echo "\$ pb study $study --max-steps 40 --name second --store B --reuse-from A --dry-run | tail -2"
pb study $study --max-steps 40 --name second --store B --reuse-from A --dry-run | tail -2
show pb study $study --max-steps 20 --name second --store B --reuse-from A
show pb study $study --max-steps 20 --name second --store A --reuse-from A
echo "\$ pb score --store A | grep note"; pb score --store A | grep note
echo "\$ pb score --json --store A | grep -A2 duplicate_trials"
pb score --json --store A | grep -A2 duplicate_trials
echo "\$ wc -c A/runs/*/run.json"; wc -c A/runs/*/run.json
echo "\$ (bytes of each run.json's reuse_inputs, as written: indented by 1)"
"$py" -c "import glob, json; print([len(json.dumps(json.load(open(p))['reuse_inputs'], indent=1)) for p in sorted(glob.glob('A/runs/*/run.json'))])"
