"""Imports stay light: what a notebook, the analysis API and the analysis commands load. Each
case runs in a fresh interpreter and lists which of its forbidden modules ended up in
sys.modules (DESIGN: `import workbench` loads no torch, panel or runners; the analysis commands
load no dashboard libraries and no torch)."""
from __future__ import annotations

import subprocess
import sys

import pytest

from workbench import testing as T

from locations import REPO

DASHBOARD = ("panel", "bokeh", "holoviews")
NOT_IN_WORKBENCH = ("torch", *DASHBOARD, "runners")  # `import workbench` and the API
NOT_IN_ANALYSIS = (*DASHBOARD, "torch")              # the CLI's analysis commands


@pytest.fixture(scope="module")
def stores(tmp_path_factory, fake_store) -> dict[str, str]:
    """The stores the cases read: the session's fake store (fast and slow on two workloads), a
    store as everyday use leaves it (ad-hoc runs, two study names) and a one-rung ladder."""
    root = tmp_path_factory.mktemp("import_weight")
    T.make_mixed_store(root / "mixed")
    T.make_ladder_store(root / "ladder", {"adamw": 1.0, "x": 2.0}, rungs=T.LADDER_RUNGS[:1],
                        budgets=(1, 2, 4), seeds=2)
    return {"fake": str(fake_store), "mixed": str(root / "mixed"),
            "ladder": str(root / "ladder")}


def _cli(*argv: str) -> str:
    """A script that runs one command and prints its exit code."""
    return f"from runners.cli import main\nprint('CODE', main({list(argv)!r}))\n"


# what runs -> the modules it must not load; a script's {fake}, {mixed}, {ladder}: the stores
CASES = {
    "import workbench": ("import workbench, workbench.cubes, workbench.scoring, "
                         "workbench.testing\nprint('CODE', 0)\n", NOT_IN_WORKBENCH),
    "the API": ("import workbench\nres = workbench.open({mixed!r})\nres.score()\n"
                "res.compare('heavy_ball', 'adamw', studies=['main'])\nres.budget()\n"
                "print('CODE', 0)\n", NOT_IN_WORKBENCH),
    "score": (_cli("score", "--store", "{fake}"), NOT_IN_ANALYSIS),
    "rank": (_cli("rank", "--store", "{fake}"), NOT_IN_ANALYSIS),
    "budget": (_cli("budget", "--store", "{fake}"), NOT_IN_ANALYSIS),
    "compare": (_cli("compare", "--store", "{fake}", "--algorithms", "fast,slow"),
                NOT_IN_ANALYSIS),
    "ladder --summary": (_cli("ladder", "--summary", "--store", "{ladder}"), NOT_IN_ANALYSIS),
}


@pytest.mark.parametrize("case", list(CASES))
def test_imports_stay_light(case, stores):
    script, forbidden = CASES[case]
    script = ("import sys\n" + script.format(**stores) +
              f"print('LOADED', sorted(m for m in {forbidden!r} if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         cwd=REPO)  # cwd: the checkout's code, whatever is installed
    assert out.stdout.splitlines()[-2:] == ["CODE 0", "LOADED []"], out.stdout + out.stderr
