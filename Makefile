# Pacebench: `make demo` and `make test` each do all of their own set-up on a fresh machine.
VENV    ?= .venv
PY      := $(VENV)/bin/python
SHARED  ?= ../shared
STAMP   := $(VENV)/.installed
# Real data beside the project (CI and developers): tiny-Shakespeare is read from there, no download.
export PACEBENCH_DATA ?= $(if $(wildcard $(SHARED)/data/tinyshakespeare/input.txt),$(abspath $(SHARED)/data),)

.PHONY: install test test-fast test-unit wheel-check demo ladder-demo ladder-null serve clean

install: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	test -x $(PY) || python3 -m venv $(VENV)
	# torch first and pinned: an unpinned torch would pull several GB of CUDA packages
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -c constraints.txt -e '.[test]'
	@if [ ! -x /usr/bin/chromium ]; then \
	  if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	    echo "installing Debian's chromium for the browser tests"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else \
	    echo "warning: /usr/bin/chromium is missing and apt-get is not usable: install Debian's chromium for the browser tests"; \
	  fi; \
	fi
	@# a real single-node Slurm for the Slurm backend's tests (tests/slurm_cluster.py, docs/slurm.md)
	@if [ ! -x /usr/sbin/slurmd ] || [ ! -x /usr/sbin/slurmctld ] || [ ! -x /usr/sbin/munged ]; then \
	  if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	    echo "installing Debian's slurmctld, slurmd and munge for the Slurm tests"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurmctld slurmd munge >/dev/null; \
	  else \
	    echo "warning: Slurm is missing and apt-get is not usable: install Debian's slurmctld, slurmd and munge (as root) for the Slurm tests"; \
	  fi; \
	fi
	touch $@

# Two pytest workers (the machine's 2 cores); tests sharing an expensive fixture stay together.
test: install wheel-check
	$(PY) -m pytest -q -ra -n 2 --dist loadgroup

# The package as a user installs it: the wheel built from a copy of this checkout's files (what
# git tracks or would add; no stale build/ folder), installed with constraints.txt and the pinned
# CPU torch into a fresh virtual environment outside the checkout (no system site packages, so
# a dependency missing from pyproject.toml fails here; pip's cache and wheel sources make it
# quick), then `pacebench list` and one short `pacebench run` from another folder.
WHEEL_CHECK ?= $(or $(TMPDIR),/tmp)/pacebench-wheel-check
wheel-check: install
	@start=$$(date +%s); set -e; rm -rf $(WHEEL_CHECK); mkdir -p $(WHEEL_CHECK)/src $(WHEEL_CHECK)/run; \
	  git ls-files -z --cached --others --exclude-standard \
	    | tar --null --ignore-failed-read -T - -cf - 2>/dev/null | tar -xf - -C $(WHEEL_CHECK)/src; \
	  $(PY) -m pip wheel --quiet --no-deps --no-build-isolation -w $(WHEEL_CHECK)/dist $(WHEEL_CHECK)/src; \
	  $(PY) -m venv $(WHEEL_CHECK)/venv; \
	  $(WHEEL_CHECK)/venv/bin/python -m pip install --quiet --no-compile torch==2.13.0; \
	  $(WHEEL_CHECK)/venv/bin/python -m pip install --quiet --no-compile -c constraints.txt $(WHEEL_CHECK)/dist/pacebench-*.whl; \
	  cd $(WHEEL_CHECK)/run; \
	  ../venv/bin/pacebench list > list.txt; grep -q digits_mlp list.txt; \
	  ../venv/bin/pacebench run --workload synthetic --algorithm adamw --max-steps 10 --store store; \
	  echo "wheel-check: the wheel installs and runs ($$(( $$(date +%s) - start )) s)"

test-fast: install
	$(PY) -m pytest -q -m "not slow and not browser and not gpu"

# The unit layer only (tests/unit/<area>/): pure functions, stores and views, no real study.
test-unit: install
	$(PY) -m pytest -q -n 2 --dist loadgroup tests/unit

demo: install
	$(VENV)/bin/pacebench study --workloads mnist1d_mlp,mnist1d_cnn --algorithms adamw,heavy_ball \
	  --studies 3 --trials 5 --workers 2 --name demo --store results/demo --resume
	$(VENV)/bin/pacebench score --store results/demo
	$(VENV)/bin/pacebench compare --store results/demo --algorithms adamw,heavy_ball
	$(VENV)/bin/pacebench report --store results/demo --out reports/demo.html --title "Pacebench demo" \
	  --figures reports/demo-figures
	@echo
	@echo "Report:    open reports/demo.html in a browser (self-contained, works offline)"
	@echo "Figures:   reports/demo-figures/ (PNG and SVG of each plot, for papers)"
	@echo "Dashboard: $(VENV)/bin/pacebench serve --store results/demo   then open http://127.0.0.1:5006/app"
	@echo "   or:     PACEBENCH_STORE=results/demo $(VENV)/bin/panel serve workbench/app.py --address 127.0.0.1"

# The three smallest ladder rungs x budgets 1, 2, 4 (x 20 tokens per non-embedding parameter) x
# adamw and nadamw x 2 seeds on the generated corpus (docs/ladder.md gives its measured time and
# output); prints its own wall time and the machine's load, then the summary.
LADDER_DEMO := --sizes gpt_7k,gpt_28k,gpt_111k --budgets 1,2,4 --algorithms adamw,nadamw \
  --seeds 2 --evals 4 --workers 2 --data generated --name ladder-demo --store results/ladder-demo
ladder-demo: install
	@start=$$(date +%s); $(VENV)/bin/pacebench ladder $(LADDER_DEMO) --quiet --resume; \
	  status=$$?; echo "ladder-demo: $$(( $$(date +%s) - start )) s wall on $$(nproc) cores; load" \
	  "average at the end $$(cut -d' ' -f1-3 /proc/loadavg)"; exit $$status

# The null check: the reference against itself under another name (twin) must give speedup 1
# inside its interval at every rung (the two smallest rungs x budgets 1, 2, 4 x 2 seeds).
ladder-null: install
	@start=$$(date +%s); $(VENV)/bin/pacebench ladder --sizes gpt_7k,gpt_28k --budgets 1,2,4 \
	  --algorithms adamw,twin=adamw --seeds 2 --evals 4 --workers 2 --data generated \
	  --name ladder-null --store results/ladder-null --quiet --resume; \
	  status=$$?; echo "ladder-null: $$(( $$(date +%s) - start )) s wall on $$(nproc) cores; load" \
	  "average at the end $$(cut -d' ' -f1-3 /proc/loadavg)"; exit $$status

serve: install
	$(VENV)/bin/pacebench serve --store $${PACEBENCH_STORE:-results/demo}

clean:
	rm -rf $(VENV) *.egg-info .pytest_cache
