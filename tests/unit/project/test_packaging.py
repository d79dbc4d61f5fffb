"""The distribution ships every module and the data files the code reads (pyproject.toml):
what a wheel holds, checked from the source tree (`make wheel-check` installs a real one)."""
from __future__ import annotations

import fnmatch
import subprocess
import tomllib
from pathlib import Path

from setuptools import find_packages

from locations import REPO

ROOT = REPO
SETUPTOOLS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def _tracked(*folders: str) -> list[Path]:
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard",
                          *folders], cwd=ROOT, capture_output=True, text=True, check=True)
    return [ROOT / line for line in out.stdout.splitlines() if (ROOT / line).is_file()]


def test_packages_are_discovered_so_none_can_be_left_out():
    found = set(find_packages(str(ROOT), **SETUPTOOLS["packages"]["find"]))
    assert {"workbench", "runners", "runners.cli", "workbench.views"} <= found
    assert not any(p.split(".")[0] not in ("workbench", "runners") for p in found), found
    folders = {f.parent for f in _tracked("workbench", "runners") if f.suffix == ".py"}
    for folder in folders:  # every folder of modules is a found package (or package data)
        name = ".".join(folder.relative_to(ROOT).parts)
        assert name in found or name.startswith("runners.algoperf.compat"), name


def test_every_data_file_of_the_packages_ships():
    """Each file under workbench/ and runners/ that is not a module (the target records, the
    search spaces, the AlgoPerf stand-ins) is matched by the package data of its package."""
    data = SETUPTOOLS["package-data"]
    files = [f for f in _tracked("workbench", "runners") if f.suffix != ".py"]
    assert any(f.parent.name == "targets" for f in files)  # workbench/targets/*.json
    for f in files + [f for f in _tracked("runners/algoperf/compat") if f.suffix == ".py"]:
        rel = f.relative_to(ROOT)
        owners = [(p, rel.relative_to(Path(*p.split(".")))) for p in data
                  if rel.is_relative_to(Path(*p.split(".")))]
        assert any(fnmatch.fnmatch(str(inside), g) for p, inside in owners for g in data[p]), rel
