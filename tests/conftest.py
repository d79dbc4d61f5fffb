"""Shared fixtures (the real data beside the project, stores and a report made once per session),
and two collection rules:
- a test marked `gpu` is skipped, saying so, where there is no CUDA device (whatever `-m` says);
- tests that share an expensive module fixture run in one pytest-xdist worker (`make test`
  runs `pytest -n 2 --dist loadgroup`), so that it is built once: SHARED_FIXTURES; the longest
  tests are collected first (LONG_TESTS)."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Callable

import pytest
from filelock import FileLock

REPO_ROOT = Path(__file__).resolve().parents[1]

# jsonschema (under nbformat, papermill, nbconvert and Ray, which test modules import) checks
# the "iri" string format with rfc3987_syntax when that is installed, whose import builds a Lark
# grammar: 2.4 s alone, 7 s in a loaded test worker's collection, paid by every worker. Nothing
# of ours validates an iri; without it jsonschema skips that one format, as documented.
sys.modules.setdefault("rfc3987_syntax", None)  # (None: `import rfc3987_syntax` raises ImportError)
# The same for processes a test starts that import Ray (each of a local Ray's agents and
# workers): this folder first on their PYTHONPATH, its rfc3987_syntax.py an ImportError.
NO_IRI = Path(__file__).resolve().parent / "no_iri"


def shared_data_dir() -> Path:
    """$PACEBENCH_DATA (the Makefile sets it), else ../shared/data beside the checkout."""
    env = os.environ.get("PACEBENCH_DATA")
    return Path(env) if env else REPO_ROOT.parent / "shared" / "data"


# fixture -> the xdist group of the tests that use it: what a module fixture holds (a local Ray
# instance) is started once, and the two browser tests of the imported
# v0.5 store run one after the other on one worker while the other goes on with the rest
# (instead of both workers waiting for its import at once). (Session fixtures are made once
# per session whichever worker asks first: _made_once.)
SHARED_FIXTURES = {"local_ray": "ray", "algoperf_store": "algoperf_v05_browser",
                   "slurm_cluster": "slurm"}
# Tests of about 20 s or more outside the groups (`--durations` of a whole run, longest first):
# collected first, so that the workers start on them right after the groups (which xdist hands
# out first, largest first) and the short tests fill in around them; a long test handed out
# last keeps one worker busy while the other idles. (Not the users of algoperf_v05: first, they
# would wait for its import on the other worker.)
LONG_TESTS = ("test_every_view_of_our_own_study_with_filters",
              "test_chaos_random_worker_kills_then_resume_completes_every_trial_once",
              "test_dashboard_on_a_missing_store_then_runs_written_while_it_is_open",
              "test_one_study_launched_twice_at_once_runs_each_trial_once",
              "test_four_concurrent_studies_share_one_store",
              "test_papermill_writes_a_filtered_report_with_figures",
              "test_the_report_works_offline_and_runs_no_name_as_script",
              "test_the_ladder_tab_draws_a_hostile_ladder_and_runs_no_name",
              "test_sigkill_mid_study_then_resume_completes_each_trial_once",
              "test_cli_writes_only_the_asked_formats",
              "test_papermill_runs_a_tiny_scaling_study",
              "test_compile_time_benchmark_prints_recorded_against_first_step_seconds",
              "test_the_ladder_tab_draws_an_imported_table_with_a_hostile_rung",
              "test_papermill_runs_a_tiny_study",
              "test_ctrl_c_stops_a_study_within_10_s_whatever_its_plug_ins_do")


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(config, items) -> None:
    for item in items:
        group = next((g for f, g in SHARED_FIXTURES.items() if f in item.fixturenames), None)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
    # longest first, then the rest in their order (the sort is stable)
    rank = {name: i for i, name in enumerate(LONG_TESTS)}
    items.sort(key=lambda item: rank.get(getattr(item, "originalname", item.name),
                                         len(rank)))
    gpu = [item for item in items if "gpu" in item.keywords]
    if not gpu:
        return
    import torch

    if not torch.cuda.is_available():
        skip = pytest.mark.skip(reason="needs a CUDA device; this machine has none")
        for item in gpu:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The real data folder; its absence is a failure (CI always has ../shared beside the clone)."""
    path = shared_data_dir()
    if not (path / "tinyshakespeare" / "input.txt").is_file():
        pytest.fail(f"real data not found at {path}: put ../shared beside the checkout or set "
                    "PACEBENCH_DATA to a folder holding tinyshakespeare/input.txt")
    return path


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory):
    """A real single-node Slurm (tests/slurm_cluster.py), started once per session (its tests
    share one xdist worker: SHARED_FIXTURES) and stopped at its end; SLURM_CONF points the
    session's clients at it. A Slurm that cannot start is a failure with the daemons' words,
    never a skip."""
    from slurm_cluster import SlurmCluster

    cluster = SlurmCluster(tmp_path_factory.mktemp("slurm"))
    try:
        cluster.start()
    except RuntimeError as err:
        pytest.fail(f"could not start the test Slurm: {err}")
    before = os.environ.get("SLURM_CONF")
    os.environ.update(cluster.environ())
    yield cluster
    cluster.stop()
    if before is None:
        os.environ.pop("SLURM_CONF", None)
    else:
        os.environ["SLURM_CONF"] = before


@pytest.fixture()
def one_thread():
    """One intra-op torch thread: tiny models run faster and tests do not fight over 2 cores."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _made_once(tmp_path_factory, name: str, make: Callable[[Path], dict]) -> dict:
    """`make(folder)`, run once per test session even across pytest-xdist workers: the first to
    get here makes it under a file lock and records its result (a JSON object) beside it; the
    others wait for the lock and read that."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the session's folder, shared by its workers
    folder, done = root / name, root / f"{name}.json"
    with FileLock(str(root / f"{name}.lock")):
        if not done.exists():
            folder.mkdir()
            done.write_text(json.dumps(make(folder)))
    return json.loads(done.read_text())


@pytest.fixture(scope="session")
def algoperf_v05(shared_data, tmp_path_factory) -> SimpleNamespace:
    """The real AlgoPerf v0.5 external-tuning logs (3,700 runs), imported once per session:
    `path` (the store), `imported`, `problems`, `submissions`, `summary` (the import's report)
    and `seconds` (how long the import took). Tests only read it."""
    def make(root: Path) -> dict:
        import tarfile
        import time

        from workbench.importers.algoperf import import_algoperf

        with tarfile.open(shared_data / "algoperf" /
                          "algoperf_v05_external_tuning_logs.tar.xz") as tar:
            tar.extractall(root / "logs", filter="data")
        start = time.perf_counter()
        report = import_algoperf(root / "logs", root / "store",
                                 shared_data / "algoperf" / "workload_targets_v05.json")
        return {"path": str(root / "store"), "imported": report.imported,
                "problems": report.problems, "submissions": report.submissions,
                "summary": report.summary(), "seconds": time.perf_counter() - start}
    made = _made_once(tmp_path_factory, "algoperf_v05", make)
    return SimpleNamespace(**{**made, "path": Path(made["path"])})


@pytest.fixture(scope="session")
def fake_store(tmp_path_factory) -> Path:
    """workbench.testing.make_store's default store (algorithms "fast" and "slow" on digits_mlp
    and digits_cnn, 2 studies x 3 trials), made once per session. Tests only read it."""
    def make(folder: Path) -> dict:
        from workbench.testing import make_store

        make_store(folder / "store")
        return {"path": str(folder / "store")}
    return Path(_made_once(tmp_path_factory, "fake_store", make)["path"])




@pytest.fixture(scope="session")
def hostile_report(tmp_path_factory) -> Path:
    """The HTML report of a store whose every name is markup (workbench.testing.
    make_hostile_store: two workloads, one a variant, 2 algorithms x 2 trials), its title too,
    written once per session."""
    def make(folder: Path) -> dict:
        from workbench.report import write_report
        from workbench.testing import hostile, make_hostile_store

        store = make_hostile_store(folder / "store", workloads=("digits_mlp", "digits_cnn"),
                                   studies=1, trials=2)
        return {"path": str(write_report(store.root, folder / "report.html",
                                         title=hostile("title")))}
    return Path(_made_once(tmp_path_factory, "hostile_report", make)["path"])
