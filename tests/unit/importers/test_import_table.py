"""`pacebench import-table` (workbench/importers/tables.py, speedrun.py): finals tables become
ladders, eval tables and speedrun logs become times to target; every bad row is one error line
and nothing is written."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import workbench
from runners.cli import main
from workbench.importers.tables import TableError, import_table, parse_target

from locations import TEST_DATA

DATA = TEST_DATA
N = 10**6


def _finals(path: Path, rows: list[dict], kind: str = "csv") -> Path:
    frame = pd.DataFrame(rows)
    if kind == "csv":
        frame.to_csv(path, index=False)
    elif kind == "parquet":
        frame.to_parquet(path)
    else:
        frame.to_json(path, orient="records", lines=True)
    return path


def _loss(d: float) -> float:
    return 0.9 * (d / 1e9) ** -0.3 + 3.0


def _half_rows() -> list[dict]:
    """The reference at budgets 1 to 16; `half`: the reference's losses at half the tokens."""
    rows = []
    for b in (1, 2, 4, 8, 16):
        d = 20.0 * N * b
        rows.append({"algorithm": "adamw", "rung": "1M", "non_embedding_params": N,
                     "tokens": d, "final_loss": _loss(d)})
        rows.append({"algorithm": "half", "rung": "1M", "non_embedding_params": N,
                     "tokens": d / 2, "final_loss": _loss(d)})
    return rows


def test_csv_parquet_and_json_lines_read_alike(tmp_path):
    from workbench.importers.tables import finals_runs, read_table

    docs = []
    for kind, suffix in (("csv", "csv"), ("parquet", "parquet"), ("json", "jsonl")):
        path = _finals(tmp_path / f"t.{suffix}", _half_rows(), kind)
        runs = finals_runs(read_table(path), Path("t"), "t")
        docs.append([(d["run_id"], d["ladder"]["tokens"], e.column("validation/loss")[0].as_py())
                     for d, e in runs])
    assert len(docs[0]) == 10
    for other in docs[1:]:  # the same runs; losses equal to CSV's printed digits
        assert [d[:2] for d in other] == [d[:2] for d in docs[0]]
        assert [d[2] for d in other] == pytest.approx([d[2] for d in docs[0]], rel=1e-9)


def test_a_candidate_at_half_the_tokens_is_2_at_every_shared_budget(tmp_path):
    suffix = "csv"
    path = _finals(tmp_path / f"t.{suffix}", _half_rows())
    report = import_table(path, tmp_path / "s", "finals")
    assert report.imported == 10
    out = workbench.open(tmp_path / "s").ladder()
    s = out["rungs"][0]["speedups"]["half"]
    shared = [p for p in s["per_budget"] if p["shared"]]
    assert [p["budget"] for p in shared] == [1, 2, 4, 8]
    assert [f"{p['value']:.3f}" for p in shared] == ["2.000"] * 4
    assert f"{s['value']:.3f}" == "2.000"
    assert out["origins"] == {"finals table 't' (t.%s)" % suffix: 10}
    assert import_table(path, tmp_path / "s", "finals").existing == 10  # again: nothing added


def test_the_worked_example_reads_as_a_ladder_through_the_cli(tmp_path, capsys):
    store = str(tmp_path / "s")
    assert main(["import-table", str(DATA / "ladder_finals.csv"), "--kind", "finals",
                 "--store", store]) == 0
    assert "imported 27 runs" in capsys.readouterr().out
    assert main(["ladder", "--summary", "--store", store]) == 0
    text = capsys.readouterr().out
    assert "rung 130M: 134,217,728 non-embedding parameters" in text
    assert "27 from finals table 'ladder_finals' (ladder_finals.csv)" in text
    assert "give --loss-noise SIGMA" in text and "NaN" not in text
    assert main(["ladder", "--summary", "--json", "--loss-noise", "0.0015", "--fit-budgets",
                 "1,2,4,8", "--store", store]) == 0
    out = json.loads(capsys.readouterr().out)
    muon = out["rungs"][0]["speedups"]["muon"]
    assert out["rungs"][0]["fit"]["points"] == 4 and muon["interval"] is not None
    assert out["verdicts"]["muon"].startswith("muon: faster than adamw at every rung")
    doc = next(d for d in workbench.open(store).store.documents())
    assert doc["source"] == "table" and doc["origin"]["file"] == "ladder_finals.csv"
    assert doc["origin"]["sha256"] and doc["origin"]["row"] >= 1


def _speedrun(folder: Path, algorithms: dict[str, int], seeds: int = 3) -> Path:
    """Logs of 3 seeds per algorithm, reaching val_loss 3.28 at step 2990 - shift + 40 seed,
    evals every 125 steps then every 25, train lines in between."""
    rng = np.random.default_rng(3)
    for name, shift in algorithms.items():
        (folder / name).mkdir(parents=True)
        for seed in range(seeds):
            lines = ["=== a config dump, ignored ===", "step:0/3400 val_loss:10.8258 "
                     "train_time:0ms step_avg:nanms"]
            for step in [*range(125, 2751, 125), *range(2775, 3401, 25)]:
                loss = 3.28 + 0.0045 * (2990 - shift - step + 40 * seed) / 100 + \
                    rng.normal(0, 1e-4)
                lines += [f"step:{step}/3400 train_loss:{loss:.4f} train_time:{step * 190}ms",
                          f"step:{step}/3400 val_loss:{loss:.4f} train_time:{step * 190}ms "
                          "step_avg:190.0ms"]
            (folder / name / f"{seed:02d}.txt").write_text("\n".join(lines) + "\n")
    return folder


def test_speedrun_logs_give_steps_to_target_per_seed_and_a_compare_on_steps(tmp_path, capsys):
    logs = _speedrun(tmp_path / "logs", {"baseline": 0, "newopt": 200})
    store = str(tmp_path / "s")
    assert main(["import-table", str(logs), "--kind", "speedrun-logs", "--target",
                 "val_loss<=3.28", "--name", "track3", "--store", store]) == 0
    assert "imported 6 runs" in capsys.readouterr().out
    res = workbench.open(store)
    runs = res.runs().sort_values(["algorithm", "seed"])
    assert list(runs["study"]) == [0, 1, 2, 0, 1, 2] and set(runs["ruleset"]) == {"self"}
    # loss 3.28 + 0.0045 (2990 - shift - step + 40 seed) / 100: the first eval at or past
    # 2990 - shift + 40 seed (evals every 25 steps there; noise 1e-4 is 10 steps' 0.00045 / 4.5)
    expected = [3000, 3050, 3075, 2800, 2850, 2875]
    assert list(runs["step_to_target"]) == expected
    assert set(runs["budget_steps"]) == {3400} and set(runs["workload"]) == {"track3"}
    out = res.compare("baseline", "newopt", time_axis="steps")
    assert out["time_axis"] == "steps" and out["unit"] == "steps"
    row = out["per_workload"]["track3"]
    assert row["ratio"] == pytest.approx(np.median([2800, 2850, 2875]) /
                                         np.median([3000, 3050, 3075]), rel=1e-6)
    assert row["studies_a"] == row["studies_b"] == 3
    assert main(["compare", "--algorithms", "baseline,newopt", "--time-axis", "steps",
                 "--store", store]) == 0
    assert "steps" in capsys.readouterr().out


def test_an_evals_table_with_studies_trials_and_hyperparameters(tmp_path):
    rows = []
    for run, (alg, study, trial, lr) in enumerate([("a", 0, 0, 0.1), ("a", 0, 1, 0.2),
                                                   ("b", 0, 0, 0.1), ("b", 0, 1, 0.3)]):
        for step in (100, 200, 300):
            rows.append({"algorithm": alg, "workload": "wl", "run": f"r{run}", "step": step,
                         "study": study, "trial": trial, "learning_rate": lr,
                         "train_seconds": step / 10,
                         "validation/loss": 4.0 - step / 100 * (1.2 if alg == "b" else 0.8)})
    path = _finals(tmp_path / "evals.csv", rows)
    report = import_table(path, tmp_path / "s", "evals", target="validation/loss<=1.5")
    assert report.imported == 4 and report.notes == []
    runs = workbench.open(tmp_path / "s").runs().sort_values("run_id")
    assert set(runs["ruleset"]) == {"external"}
    assert sorted(runs["time_to_target"].dropna()) == [30.0, 30.0]  # b reaches 1.5 at step 300
    docs = list(workbench.open(tmp_path / "s").store.documents())
    assert {d["hparams"]["learning_rate"] for d in docs} == {0.1, 0.2, 0.3}


@pytest.mark.parametrize("change, message", [
    (lambda f: f.drop(columns="tokens"), "lacks column tokens; required are algorithm, rung"),
    (lambda f: f.assign(tokns=1), "unknown column 'tokns'; valid are"),
    (lambda f: f.assign(final_loss=["nan"] + list(f["final_loss"][1:])),
     "row 1, column final_loss: 'nan' is not valid; valid is a finite loss >= 0"),
    (lambda f: f.assign(final_loss=[-1.0] + list(f["final_loss"][1:])),
     "row 1, column final_loss: '-1.0' is not valid"),
    (lambda f: f.assign(algorithm=["<b>x</b>"] + list(f["algorithm"][1:])),
     "row 1, column algorithm: '<b>x</b>' is not valid; valid is a plain name"),
    (lambda f: f.assign(non_embedding_params=[1.5] + list(f["non_embedding_params"][1:])),
     "row 1, column non_embedding_params: '1.5' is not valid; valid is a whole number >= 1"),
    (lambda f: pd.concat([f, f.iloc[:1]]), "row 11 repeats row 1"),
    (lambda f: f.assign(hparams=["[1]"] * len(f)), "column hparams: '[1]' is not valid"),
])
def test_a_bad_finals_row_is_one_error_line_and_nothing_is_written(tmp_path, capsys, change,
                                                                   message):
    path = _finals(tmp_path / "bad.csv", change(pd.DataFrame(_half_rows())).to_dict("records"))
    store = tmp_path / "s"
    assert main(["import-table", str(path), "--kind", "finals", "--store", str(store)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("error: bad.csv: "), err
    assert message in err
    assert not (store / "runs").exists() or not any((store / "runs").iterdir())


@pytest.mark.parametrize("lines, message", [
    (["step:100/400 val_loss:3.5", "step:50/400 val_loss:3.4"],
     "line 2: step 50 after step 100; valid are steps non-decreasing"),
    (["step:100/400 val_loss:nan"], "line 1: val_loss 'nan' is not valid"),
    (["step:100/400 val_loss:3.5 train_time:100ms", "step:200/400 val_loss:3.4 train_time:50ms"],
     "line 2: train_time 50ms is not valid"),
    (["step:100/400 val_loss:3.5", "step:200/500 val_loss:3.4"], "planned steps 500 after 400"),
])
def test_a_bad_speedrun_log_is_one_error_line(tmp_path, capsys, lines, message):
    (tmp_path / "logs" / "x").mkdir(parents=True)
    (tmp_path / "logs" / "x" / "0.txt").write_text("\n".join(lines) + "\n")
    code = main(["import-table", str(tmp_path / "logs"), "--kind", "speedrun-logs", "--target",
                 "val_loss<=3.28", "--store", str(tmp_path / "s")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.count("\n") == 0 and message in err, err


def test_bad_eval_tables_and_targets_are_one_line(tmp_path):
    rows = [{"algorithm": "a", "workload": "w", "run": "r", "step": s, "validation/loss": v}
            for s, v in ((10, 3.0), (5, 2.9))]
    path = _finals(tmp_path / "e.csv", rows)
    with pytest.raises(TableError, match="row 2, column step: 5 is not valid; valid is steps "
                                         "non-decreasing along run 'r'"):
        import_table(path, tmp_path / "s", "evals", target="validation/loss<=2")
    with pytest.raises(TableError, match="lacks the target's column validation/accuracy"):
        import_table(path, tmp_path / "s", "evals", target="validation/accuracy>=0.9")
    with pytest.raises(TableError, match="needs --target"):
        import_table(path, tmp_path / "s", "evals")
    for bad in ("loss<3", "validation/loss<=x", "train/loss<=3"):
        with pytest.raises(TableError):
            parse_target(bad)
    assert parse_target("val_loss<=3.28") == ("validation/loss", "min", 3.28)
    assert not (tmp_path / "s" / "runs").exists()


def test_a_hostile_rung_name_is_kept_as_text_and_escaped_in_the_ladder_tab(tmp_path):
    """A rung label that is markup imports (it is text), and the Ladder tab shows it escaped;
    the tab draws the imported ladder with its D_eff plot and verdicts."""
    from workbench.testing import hostile
    from workbench.views.ladder import Ladder
    from workbench.views.selection import Selection

    rows = [dict(r, rung=hostile("rung")) for r in _half_rows()]
    rows += [dict(r, rung="4M", non_embedding_params=4 * N, tokens=4 * r["tokens"])
             for r in _half_rows()]
    path = _finals(tmp_path / "t.jsonl", rows, "json")
    import_table(path, tmp_path / "s", "finals")
    selection = Selection(store_path=str(tmp_path / "s"))
    view = Ladder(selection=selection)
    assert not view.failure.visible
    kinds = [type(o).__name__ for o in view._body.objects]
    # speedups, table, notes; per rung its loss and D_eff plots and 2 warnings
    assert kinds == ["HoloViews", "DataFrame", "Markdown"] + \
        ["HoloViews", "HoloViews", "Markdown", "Markdown"] * 2
    table = view._body.objects[1].object
    assert list(table["rung"]) == [hostile("rung"), "4M"]  # the markup rung is listed, as text
    notes = view._body.objects[2].object
    assert "half: not shown" in notes and "finals table" in notes
    warning = view._body.objects[5].object
    assert "<img" not in warning and "&lt;img" in warning
    selection.param.update(workloads=["4M"])  # the sidebar cannot pick the markup rung
    assert list(view._body.objects[1].object["rung"]) == [hostile("rung"), "4M"]
