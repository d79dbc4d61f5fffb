#!/usr/bin/env bash
# Results never computed twice (docs/reference.md): the commands and outputs of its examples, run
# in a fresh folder. From the repository root:
#
#   bash benchmarks/reuse.sh [FOLDER]     (FOLDER: where the stores go; default a new temporary one)
#
# A study of adamw, then adamw against nadamw with --reuse-from (only nadamw's trials run), the
# same study without it (every trial runs), the scope note, a merge of the two stores, a merge
# refused for a conflicting run, and an export read back with import-parquet, DuckDB and pandas.
set -u
here=$(pwd)
folder=${1:-$(mktemp -d)}
mkdir -p "$folder" && cd "$folder" || exit 1
py=${PYTHON:-$here/.venv/bin/python}
pb() { PYTHONPATH=$here "$py" -m runners.cli "$@"; }
show() { echo "\$ $*"; "$@"; }
study="--workloads digits_mlp --trials 2 --max-steps 60 --name demo --quiet"
show pb study $study --algorithms adamw --store A
show pb study $study --algorithms adamw,nadamw --store B --reuse-from A
show pb study $study --algorithms adamw,nadamw --store C
echo "\$ pb score --store B | grep note"; pb score --store B | grep note
show pb merge --store M A B
cp -r A A2
run=$(ls A2/runs | head -1)
PYTHONPATH=$here "$py" -c "import json, sys; p = sys.argv[1]; d = json.load(open(p)); \
d['hparams']['learning_rate'] = 0.5; json.dump(d, open(p, 'w'))" "A2/runs/$run/run.json"
echo "(A2: a copy of A with the learning rate of $run edited)"
show pb merge --store N A A2; echo "exit $?"; ls -d N 2>&1
show pb export --store B --out X
show pb import-parquet X --store T
echo "\$ diff <(pb score --json --store B) <(pb score --json --store T)"
diff <(pb score --json --store B) <(pb score --json --store T) && echo "score --json identical"
show "$py" -c "import duckdb; print(duckdb.sql(\"SELECT algorithm, count(*) AS runs FROM 'X/runs.parquet' GROUP BY 1 ORDER BY 1\").fetchall())"
show "$py" -c "import pandas; print(pandas.read_parquet('X/evals.parquet').groupby('run_id').size().to_dict())"
