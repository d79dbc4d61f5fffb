"""Plug-ins: the example workload and optimizer of examples/ by path, installed plug-ins through
entry points, and the one-line errors of a bad plug-in (runners/plugins.py)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from runners import plugins
from runners.cli import main
from workbench import catalog, query
from workbench.digest import file_sha256
from workbench.store import open_store

from locations import REPO

ROOT = REPO
EXAMPLES = ROOT / "examples"


@pytest.fixture(autouse=True)
def _no_plugins_loaded(monkeypatch):
    """Each test starts with no plug-in workload registered in this process."""
    monkeypatch.setattr(catalog, "_PLUGINS", {})


@pytest.mark.slow
def test_the_example_workload_runs_a_study_and_gets_targets(tmp_path, capsys):
    store = tmp_path / "store"
    assert main(["study", "--workloads", f"{EXAMPLES}/spirals.py:Spirals",
                 "--algorithms", f"adamw,lion={EXAMPLES}/lion.py:Lion", "--trials", "1",
                 "--max-steps", "100", "--workers", "2", "--store", str(store), "--quiet"]) == 0
    runs = query.runs_frame(open_store(store))
    assert sorted(runs.workload.unique()) == ["spirals_mlp", "spirals_mlp_relu"]
    assert sorted(runs.algorithm.unique()) == ["adamw", "lion"] and set(runs.status) == {
        "complete"}
    config = open_store(store).run_doc(runs.run_id.iloc[0])["config"]
    assert config["workload_source"] == f"{EXAMPLES}/spirals.py:Spirals"
    assert config["workload_sha256"] == file_sha256(EXAMPLES / "spirals.py")
    capsys.readouterr()
    assert main(["score", "--store", str(store)]) == 0
    assert "lion" in capsys.readouterr().out

    out = tmp_path / "targets"
    assert main(["set-targets", "--workload", f"spirals_mlp={EXAMPLES}/spirals.py:Spirals",
                 "--algorithm", "adamw", "--trials", "2", "--reruns", "2", "--out", str(out),
                 "--store", str(tmp_path / "t"), "--quiet"]) == 0
    assert [p.name for p in out.iterdir()] == ["spirals_mlp.json"]  # only the entry named
    record = json.loads((out / "spirals_mlp.json").read_text())
    assert record["workload"] == "spirals_mlp" and 0.0 < record["validation_target"] <= 1.0
    assert record["workload_source"] == f"{EXAMPLES}/spirals.py:Spirals"
    assert len(record["reruns"]) == 2 and len(record["tuning"]) == 2


def _install(tmp_path: Path, monkeypatch) -> None:
    """An installed distribution (a dist-info folder on the path) with one algorithm and one
    workload plug-in, importable by the worker processes too (PYTHONPATH)."""
    shutil.copy(EXAMPLES / "lion.py", tmp_path / "pb_lion.py")
    shutil.copy(EXAMPLES / "spirals.py", tmp_path / "pb_spirals.py")
    info = tmp_path / "pb_demo-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: pb-demo\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[pacebench.algorithms]\nlion = pb_lion:Lion\n\n"
                                           "[pacebench.workloads]\nspirals = pb_spirals:Spirals\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", f"{tmp_path}:{ROOT}")


@pytest.mark.slow
def test_installed_plugins_are_listed_and_run_by_name(tmp_path, monkeypatch, capsys):
    (tmp_path / "site").mkdir()
    _install(tmp_path / "site", monkeypatch)
    assert main(["list"]) == 0
    listed = capsys.readouterr().out
    assert "spirals                      pb_spirals:Spirals -> spirals_mlp, spirals_mlp_relu" \
        in listed
    assert "lion                         pb_lion:Lion" in listed
    store = tmp_path / "store"
    assert main(["study", "--workloads", "spirals", "--algorithms", "lion", "--trials", "1",
                 "--max-steps", "50", "--workers", "2", "--store", str(store), "--quiet"]) == 0
    runs = query.runs_frame(open_store(store))
    assert len(runs) == 2 and set(runs.status) == {"complete"} and set(runs.algorithm) == {
        "lion"}
    config = open_store(store).run_doc(runs.run_id.iloc[0])["config"]
    assert (config["algorithm_source"], config["workload_source"]) == ("pb_lion:Lion",
                                                                       "pb_spirals:Spirals")
    assert config["workload_sha256"] is None  # a module: its version is the distribution's


def test_bad_workload_plugins_are_one_line_each(tmp_path):
    (tmp_path / "nocat.py").write_text("def Factory(spec, device, data_dir):\n    return None\n")
    (tmp_path / "clash.py").write_text(
        "from workbench.catalog import get_workload\n"
        "class Factory:\n    catalog = get_workload('digits_mlp')\n")
    cases = [("no_such_workload", "unknown workload 'no_such_workload': give a catalog name"),
             (f"{tmp_path}/nocat.py:Factory", "a workload factory needs `catalog`"),
             (f"{tmp_path}/clash.py:Factory", "'digits_mlp' is a built-in's name"),
             (f"{tmp_path}/missing.py:Factory", "plug-in file not found"),
             (f"nope={EXAMPLES}/spirals.py:Spirals", "has no workload 'nope': it has "
                                                     "spirals_mlp, spirals_mlp_relu")]
    for item, message in cases:
        with pytest.raises(plugins.PluginError, match=message.replace("(", r"\(")) as err:
            plugins.resolve_workloads([item])
        assert "\n" not in str(err.value)


def test_two_sources_never_share_a_workload_name(tmp_path):
    copy = tmp_path / "spirals_copy.py"
    copy.write_text((EXAMPLES / "spirals.py").read_text() + "\n# edited\n")
    assert plugins.resolve_workloads([f"{EXAMPLES}/spirals.py:Spirals"]) == [
        "spirals_mlp", "spirals_mlp_relu"]
    with pytest.raises(plugins.PluginError, match="two workloads are named 'spirals_mlp'"):
        plugins.resolve_workloads([f"{copy}:Spirals"])


def test_the_cli_says_what_a_bad_plugin_is_in_one_line(tmp_path, capsys):
    code = main(["study", "--workloads", f"{tmp_path}/none.py:F", "--algorithms", "adamw",
                 "--store", str(tmp_path / "s")])
    err = capsys.readouterr().err
    assert code != 0 and "plug-in file not found" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


class _Quit(BaseException):
    """What a plug-in's top level may raise that is no Exception."""


RAISING = {  # the plug-in file's top level, and what its one line must name
    "sys.exit(0)": ("import sys\nsys.exit(0)\n", "SystemExit"),
    "SystemExit('bye')": ("raise SystemExit('bye')\n", "SystemExit: bye"),
    "a BaseException": ("import test_plugins\nraise test_plugins._Quit('quit')\n",
                        "_Quit: quit"),
    "os._exit(0)": ("import os\nos._exit(0)\n", "it called os._exit(0) at import"),
}


@pytest.mark.parametrize("top", list(RAISING))
@pytest.mark.parametrize("how", ["study --algorithms FILE", "run --algorithm FILE",
                                 "study --workloads FILE", "run --algorithm MODULE",
                                 "run --algoperf-submission FILE"])
def test_a_plugin_whose_import_raises_anything_is_one_line_and_exit_2(tmp_path, monkeypatch,
                                                                     capsys, top, how):
    """A plug-in file whose top level raises SystemExit (sys.exit(0) included) or another
    BaseException stops the command with one line naming the file and what it raised, exit
    status 2, before anything runs."""
    source, named = RAISING[top]
    monkeypatch.syspath_prepend(str(Path(__file__).parent))  # `import test_plugins` above
    monkeypatch.syspath_prepend(str(tmp_path))
    path = tmp_path / f"quitter_{abs(hash((top, how)))}.py"
    path.write_text(source)
    store = tmp_path / "store"
    spec = {"FILE": f"{path}:Opt", "MODULE": f"{path.stem}:Opt"}
    command, flag, what = how.split()
    argv = [command, flag, str(path) if "algoperf" in flag else spec[what]]
    argv += ["--workload" if command == "run" else "--workloads", "synthetic"] \
        if "workload" not in flag else ["--algorithms", "adamw"]
    code = main([*argv, "--max-steps", "5", "--quiet", "--store", str(store)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert named in err and path.name in err
    assert not (store / "runs").exists() or not any((store / "runs").iterdir())


def test_ctrl_c_while_a_plugin_imports_still_stops_the_command(tmp_path):
    path = tmp_path / "interrupted.py"
    path.write_text("raise KeyboardInterrupt\n")
    with pytest.raises(KeyboardInterrupt):
        plugins.import_object(f"{path}:Opt")
