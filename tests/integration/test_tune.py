"""`pacebench tune` (runners/procedures/tune.py, runners/cli/tune.py): the grid and its extension at an edge,
the ranking rule, the written space and its sidecar (origin "tuned"), tuning runs in the store
and out of scores, and the one-line errors."""
from __future__ import annotations

import json
import math
from types import SimpleNamespace

import pytest

from runners.procedures import tune as T
from runners.cli import main
from runners.tuning import ChosenSpace, SearchSpaceError, sidecar_path
from workbench.store import open_store


# -- planted curves: no training -----------------------------------------------------------------
def _planted(monkeypatch, best_at: float, launched: list):
    """run_tune's reads replaced by a curve with its minimum at `best_at` (log10 distance
    squared); `launched` collects the values of each launch."""
    done = set()

    def launch(configs):
        launched.append(sorted(c.hparams["learning_rate"] for c in configs))
        done.update(c.hparams["learning_rate"] for c in configs)

    def read_points(store, configs, plan):
        return [T.Point(k, c.hparams["learning_rate"], c.trial, f"r{k}", "complete",
                        (math.log10(c.hparams["learning_rate"] / best_at)) ** 2,
                        (math.log10(c.hparams["learning_rate"] / best_at)) ** 2)
                for k, c in sorted(configs.items())]

    monkeypatch.setattr(T, "read_points", read_points)
    monkeypatch.setattr(T, "_finished", lambda store, c: c.hparams["learning_rate"] in done)
    return launch


def _plan(**kw) -> T.TunePlan:
    base = dict(workload="synthetic", algorithm="adamw", center=1e-2, steps=10,
                own_space={"learning_rate": {"min": 1e-3, "max": 1e-1, "scaling": "log"},
                           "beta2": {"feasible_points": [0.999]}})
    return T.TunePlan(**{**base, **kw})


def test_the_grid_is_seven_points_over_three_decades_centred(tmp_path, monkeypatch):
    launched = []
    launch = _planted(monkeypatch, best_at=3e-3, launched=launched)
    result = T.run_tune(_plan(), open_store(tmp_path / "s", create=True), launch)
    assert len(launched) == 1 and len(launched[0]) == 7  # best inside: no extension
    assert launched[0][0] == pytest.approx(1e-2 / 10 ** 1.5)
    assert launched[0][-1] == pytest.approx(1e-2 * 10 ** 1.5)
    assert launched[0][3] == pytest.approx(1e-2)
    assert result.extensions == [] and result.best.value == pytest.approx(10 ** -2.5)
    assert (result.low, result.high) == (pytest.approx(1e-3), pytest.approx(1e-2))


def test_a_best_at_an_edge_extends_the_grid_one_decade_at_most_twice(tmp_path, monkeypatch):
    launched = []
    launch = _planted(monkeypatch, best_at=1e-4, launched=launched)  # below the grid's 10^-3.5
    result = T.run_tune(_plan(), open_store(tmp_path / "s", create=True), launch)
    assert result.extensions == ["low"] and len(launched) == 2
    assert launched[1] == [pytest.approx(1e-2 * 10 ** -2.5), pytest.approx(1e-2 * 10 ** -2)]
    assert result.best.value == pytest.approx(1e-4)  # now inside the grid
    assert result.open_sides == []

    launched.clear()
    launch = _planted(monkeypatch, best_at=1e3, launched=launched)  # far above: twice, then
    result = T.run_tune(_plan(), open_store(tmp_path / "t", create=True), launch)  # stop
    assert result.extensions == ["high", "high"] and len(launched) == 3
    assert result.best.value == pytest.approx(1e-2 * 10 ** 3.5)  # 10^-0.5 + 2 decades
    assert result.open_sides == ["high"] and result.high == pytest.approx(1e-2 * 10 ** 4)


def test_the_estimate_ranks_only_where_it_agrees_with_the_metric():
    def points(estimates, metrics):
        return [T.Point(k, 10.0 ** k, k, f"r{k}", "complete", e, m)
                for k, (e, m) in enumerate(zip(estimates, metrics))]

    # accuracy (max): the estimate orders the grid as the metric does -> the estimate ranks
    ordered, by, rho = T.rank_points(points([0.5, 0.3, 0.2, 0.25, 0.9],
                                            [0.60, 0.70, 0.79, 0.80, 0.20]), "max")
    assert by == "estimate" and rho >= T.RELIABLE_RHO and ordered[0].k == 2
    # training loss falls where validation gets worse (overfitting): the metric ranks
    ordered, by, rho = T.rank_points(points([0.5, 0.4, 0.3, 0.2, 0.1],
                                            [0.80, 0.70, 0.60, 0.50, 0.40]), "max")
    assert by == "metric" and ordered[0].k == 0
    # a diverged run ranks last and has no rank
    pts = points([0.5, 0.4, 0.3, 0.2], [0.5, 0.6, 0.7, 0.8])
    pts[3].status = "diverged"
    ordered, by, _ = T.rank_points(pts, "max")
    assert ordered[-1].k == 3 and ordered[-1].rank is None and ordered[0].k == 2


def test_the_written_space_brackets_the_best_and_its_sidecar_makes_it_tuned(tmp_path,
                                                                           monkeypatch):
    launch = _planted(monkeypatch, best_at=3e-3, launched=[])
    result = T.run_tune(_plan(), open_store(tmp_path / "s", create=True), launch)
    out = tmp_path / "space.json"
    sidecar = T.write_space(result, out, "pacebench tune ...", tmp_path / "s")
    space = json.loads(out.read_text())
    lr = space["learning_rate"]
    assert lr["scaling"] == "log" and lr["min"] < result.best.value < lr["max"]
    grid = sorted(p.value for p in result.points)
    i = grid.index(result.best.value)
    assert (lr["min"], lr["max"]) == (grid[i - 1], grid[i + 1])
    assert space["beta2"] == {"feasible_points": [0.999]}  # the rest: the algorithm's own
    record = json.loads(sidecar.read_text())
    assert sidecar == sidecar_path(out) and record["kind"] == "pacebench-tune"
    assert record["bracket"] == [lr["min"], lr["max"]] and len(record["curve"]) == 7
    assert record["store"] == str((tmp_path / "s").resolve())
    assert ChosenSpace.from_file(out).origin == "tuned"

    out.write_text(out.read_text().replace("0.999", "0.99"))  # edited by hand since
    with pytest.warns(UserWarning, match="edited after `pacebench tune`"):
        assert ChosenSpace.from_file(out).origin == "file"
    sidecar.write_text("[1, 2]")
    with pytest.raises(SearchSpaceError, match="not a `pacebench tune` record"):
        ChosenSpace.from_file(out)


def test_the_ladder_sweep_records_a_tuned_space(tmp_path, monkeypatch):
    from runners.procedures.ladder import sweep_space

    launch = _planted(monkeypatch, best_at=3e-3, launched=[])
    result = T.run_tune(_plan(own_space={"learning_rate": {"min": 1e-3, "max": 1e-1,
                                                           "scaling": "log"},
                                         "weight_decay": {"min": 1e-3, "max": 1e-1,
                                                          "scaling": "log"}}),
                        open_store(tmp_path / "s", create=True), launch)
    out = tmp_path / "space.json"
    T.write_space(result, out, "pacebench tune ...", tmp_path / "s")
    chosen = sweep_space("adamw", None, {"adamw": str(out)})
    assert chosen.origin == "tuned" and chosen.file == str(out.resolve())
    assert chosen.space["learning_rate"]["min"] == pytest.approx(1e-3)


# -- real runs (synthetic, 10 steps each), launched in this process ----------------------------
def _inline_run_configs(configs, store, name, workers=1, resume=False, data_dir=None,
                        progress=True, hooks=None, options=None, chosen=None, *rest, **kw):
    """runners.launch.study.run_configs without worker processes: each config run by run_job here."""
    from runners.launch.scheduler import StudyResult
    from runners.launch.worker import run_job

    for config in configs:
        run_job({"config": config.to_dict(), "store": str(store.root), "data_dir": data_dir,
                 "hooks": hooks or {}, "launch_order": None,
                 "search_space": (chosen[config.algorithm].fields()
                                  if chosen and config.algorithm in chosen else None)})
    return StudyResult(planned=len(configs), succeeded=len(configs))


def test_tune_runs_are_tuning_runs_that_scores_leave_out_and_studies_record_tuned(
        tmp_path, monkeypatch, capsys):
    import runners.launch.study
    import workbench as wb

    monkeypatch.setattr(runners.launch.study, "run_configs", _inline_run_configs)
    store, out = tmp_path / "s", tmp_path / "adamw-space.json"
    assert main(["tune", "--workload", "synthetic", "--algorithm", "adamw", "--store",
                 str(store), "--out", str(out), "--max-steps", "40", "--points", "3",
                 "--decades", "1", "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert "<- best" in printed and "bracket" in printed and str(out) in printed
    runs = wb.open(store).runs()
    assert set(runs["study_name"]) == {"tune-adamw"} and set(runs["phase"]) == {"tuning"}
    assert set(runs["steps"]) == {10}  # a quarter of --max-steps 40
    doc = open_store(store).run_doc(runs["run_id"].iloc[0])
    assert doc["phase"] == "tuning" and doc["step_hint"] == 10  # the schedule over 10 steps
    n_tune = len(runs)

    assert main(["study", "--workloads", "synthetic", "--algorithms", "adamw,heavy_ball",
                 "--search-space", f"adamw={out}", "--trials", "1", "--studies", "2",
                 "--max-steps", "10", "--name", "main", "--store", str(store),
                 "--quiet"]) == 0
    res = wb.open(store)
    study = res.runs()[lambda r: r["study_name"] == "main"]
    origins = {a: open_store(store).run_doc(i)["search_space_origin"]
               for a, i in zip(study["algorithm"], study["run_id"])}
    assert origins == {"adamw": "tuned", "heavy_ball": "file"}
    score = res.score_result()
    assert any(f"left out {n_tune} tuning runs" in n for n in score.scoped.notes)
    assert set(score.scoped.runs["study_name"]) == {"main"}
    compared = res.compare_result("adamw", "heavy_ball")
    assert set(compared.scoped.runs["study_name"]) == {"main"}
    assert any("tuning runs" in n for n in compared.scoped.notes)


# -- one-line errors, nothing written --------------------------------------------------------
@pytest.mark.parametrize("flags, says", [
    (["--workload", "nope"], "unknown workload 'nope'"),
    (["--algorithm", "nope"], "unknown algorithm 'nope'"),
    (["--hparam", "momentum"], "--hparam momentum: not a hyperparameter of adamw; valid are"),
    (["--hparam", "beta2"], "--hparam beta2: has a list of feasible points in adamw's search "
                            "space, no range"),
    (["--algorithm", "torch.optim:SGD", "--hparam", "schedule"],
     "--hparam schedule: takes 'cosine', not a number"),
    (["--out", "DIR"], "is a folder"),
    (["--out", "space.txt"], "--out space.txt: give a file name ending in .json"),
    (["--out", "missing/space.json"], "no folder missing"),
    (["--center", "-1"], "--center -1.0: must be a finite number > 0"),
    (["--points", "2"], "--points 2: must be an integer >= 3"),
])
def test_bad_input_is_one_line_and_writes_nothing(tmp_path, monkeypatch, capsys, flags, says):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "DIR.json").mkdir()
    flags = [f if f != "DIR" else "DIR.json" for f in flags]
    argv = {"--workload": "synthetic", "--algorithm": "adamw", "--store": "s"}
    for flag, value in zip(flags[::2], flags[1::2]):
        argv[flag] = value
    assert main(["tune", *[x for kv in argv.items() for x in kv]]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error:") and says in err, err
    assert not (tmp_path / "s").exists() and not list(tmp_path.glob("tuned-*"))


def test_the_ladder_refuses_a_space_nothing_draws_from(tmp_path, capsys):
    space = tmp_path / "space.json"
    space.write_text(json.dumps({"learning_rate": {"min": 1e-3, "max": 1e-2, "scaling": "log"}}))
    argv = ["ladder", "--sizes", "gpt_7k", "--algorithms", "adamw", "--budgets", "1",
            "--store", str(tmp_path / "s"), "--dry-run"]
    assert main(argv + ["--search-space", f"adamw={space}"]) == 2
    assert "runs its declared setting (--trials 1)" in capsys.readouterr().err
    assert main(argv + ["--search-space", f"adamw={space}", "--trials", "3"]) == 0
    assert "nothing was run or written" in capsys.readouterr().out


def test_a_lattice_point_from_another_centre_is_the_recorded_value(tmp_path):
    from workbench.testing import make_planned_store

    plan = _plan()
    recorded = 1e-2 * (1 + 1e-13)  # the centre computed from another centre's grid
    store = make_planned_store(tmp_path / "s", {("adamw", "synthetic", 0, 0, "tune-adamw"): {
        "hparams": {"learning_rate": recorded}}})
    configs = T.plan_configs(plan, T.log_grid(plan), store)
    assert configs[0].hparams["learning_rate"] == recorded
    assert configs[1].hparams["learning_rate"] == T.log_grid(plan)[1]
    assert len({c.trial for c in configs.values()} | {0}) == 8  # trial 0 is the planted run's
