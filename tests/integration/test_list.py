"""`pacebench list`: the text listing, the README's table and `--json` (runners/cli/catalog.py)."""
from __future__ import annotations

import json

import pytest

from runners.cli import main
from workbench.catalog import CATALOG, PUBLISHED_TARGETS, get_workload, target_record

from locations import REPO

ROOT = REPO


def _listing(capsys) -> dict:
    assert main(["list", "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_list_json_shape_and_values(capsys):
    listing = _listing(capsys)
    assert set(listing) == {"workloads", "algorithms"}  # no plug-in failed to load
    assert set(CATALOG) <= set(listing["workloads"])
    for name in CATALOG:
        entry, w = listing["workloads"][name], get_workload(name)
        assert entry["target"] == {"metric": w.target.metric, "direction": w.target.direction,
                                   "validation": w.target.validation, "test": w.target.test}
        assert entry["eval_every"] == {"steps": w.eval_every.steps}
        record = target_record(name)
        steps, seconds = entry["median_steps_to_target"], entry["median_time_to_target_s"]
        assert steps == record["median_steps_to_target"]
        assert seconds == record.get("median_time_to_target_s")
        if name in PUBLISHED_TARGETS:
            assert steps is None and seconds is None and entry["eval_fraction"] is None
        else:
            assert steps > 0 and seconds > 0
            assert entry["eval_fraction"] == w.eval_every.steps / steps
            assert entry["eval_fraction"] <= 1 / 20
        assert entry["source"] == "built-in" and (ROOT / entry["builder"]).is_file()
    for name, entry in listing["algorithms"].items():
        assert entry["source"] == "built-in"
        assert (ROOT / entry["file"]).is_file() and entry["file"].endswith(f"{name}.py")
        assert (ROOT / entry["search_space"]).is_file()
    assert {"adamw", "nadamw", "sgd_nesterov", "heavy_ball"} <= set(listing["algorithms"])


def test_list_json_takes_installed_plugins(monkeypatch, capsys):
    """Installed plug-ins are listed as the text listing lists them: a workload plug-in's
    entries with their cadence, an algorithm plug-in with its search space; one that fails to
    load is named with its error, not a crash."""
    import runners.plugins as plugins

    installed = {plugins.WORKLOAD_GROUP: {"spirals": f"{ROOT}/examples/spirals.py:Spirals",
                                          "broken": f"{ROOT}/examples/missing.py:Nope"},
                 plugins.ALGORITHM_GROUP: {"lion": f"{ROOT}/examples/lion.py:Lion"}}
    monkeypatch.setattr(plugins, "entry_points", lambda group: installed.get(group, {}))
    listing = _listing(capsys)
    spirals = listing["workloads"]["spirals_mlp"]
    assert spirals["source"] == "installed plug-in" and spirals["plugin"] == "spirals"
    assert spirals["median_steps_to_target"] is None and spirals["eval_fraction"] is None
    assert "steps" in spirals["eval_every"] or "seconds" in spirals["eval_every"]
    lion = listing["algorithms"]["lion"]
    assert lion["source"] == "installed plug-in" and lion["entry_point"].endswith("lion.py:Lion")
    assert isinstance(lion["search_space"], dict) and "learning_rate" in lion["search_space"]
    assert "not found" in listing["plugin_errors"]["workload plug-in broken"]


def test_list_text_shows_each_cadence(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    w = get_workload("mnist1d_mlp")
    assert f"eval every {w.eval_every.steps} steps" in out


@pytest.mark.parametrize("flags", [["--json", "--markdown"]])
def test_list_json_and_markdown_are_exclusive(flags, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["list", *flags])
    assert exit_.value.code == 2


def test_the_docs_catalog_table_is_what_list_markdown_prints(capsys):
    """The catalog table of docs/workloads.md (targets, reach rates, noise floors, median times and steps to
    target, cadences) is the command's output, so its numbers are the records'."""
    assert main(["list", "--markdown"]) == 0
    table = capsys.readouterr().out.strip()
    assert "| median steps to target | eval every |" in table.splitlines()[0]
    assert "| 684.5 (10 of 10) | 25 steps |" in table  # mnist1d_mlp's row
    assert table in (ROOT / "docs" / "workloads.md").read_text()
