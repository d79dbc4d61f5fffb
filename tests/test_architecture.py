"""The shape of the code: arrows that run one way, one owner of the store's layout, short files
and functions, and analysis commands that never load the dashboard's libraries.

Imports are read from the source (the AST), inside functions too: an import hidden in a function
is still an arrow between two modules.
"""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from workbench import records as R

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("workbench", "runners")
LONG_FUNCTION = 60  # lines; runners/loop.run, the one training loop, is the exception
LONG_FILE = 350     # lines, for the files that used to do several jobs at once
ALLOWED_LONG = {("runners.run.loop", "run")}
# The store's file and folder names (records.py names them, store.py uses them).
STORE_FILES = {R.STORE_DOC, R.SCORING_DOC, R.RUN_DOC, R.EVALS_LIVE, R.EVALS_SEALED,
               R.TRAIN_LIVE, R.TRAIN_SEALED, R.HEARTBEAT}
STORE_FOLDERS = {R.RUNS_DIR, R.LOGS_DIR, R.CHECKPOINTS_DIR, R.INDEX_DIR, R.STUDIES_DIR,
                 R.EARLY_STOP_DIR, R.CLAIMS_DIR}
LAYOUT_OWNERS = {"workbench.records", "workbench.store"}


def _modules() -> dict[str, Path]:
    """Dotted name -> file of every module of our packages (the AlgoPerf stand-ins included)."""
    out = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            out[name] = path
    return out


MODULES = _modules()
TREES = {name: ast.parse(path.read_text(), str(path)) for name, path in MODULES.items()}


def _imported(name: str, node: ast.AST) -> list[str]:
    """The modules of ours that an import statement in module `name` imports."""
    if isinstance(node, ast.Import):
        targets = [alias.name for alias in node.names]
    elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            package = name.split(".") if MODULES[name].name == "__init__.py" else \
                name.split(".")[:-1]
            package = package[:len(package) - node.level + 1]
            base = ".".join(package + ([base] if base else []))
        # `from package import module` imports the module; `from module import name` the module
        targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base
                   for a in node.names]
    else:
        return []
    found = []
    for target in targets:
        parts = target.split(".")
        for i in range(len(parts), 0, -1):
            if ".".join(parts[:i]) in MODULES:
                found.append(".".join(parts[:i]))
                break
    return [f for f in found if f != name]


GRAPH = {name: {t for node in ast.walk(tree) for t in _imported(name, node)}
         for name, tree in TREES.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index, low, on_stack, stack, out, counter = {}, {}, set(), [], [], [0]
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return out


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_circles_counting_imports_inside_functions():
    assert _cycles(GRAPH) == []


def test_arrows_run_one_way():
    wrong = [(a, b) for a, targets in GRAPH.items() for b in targets
             if a.startswith("workbench") and b.startswith("runners")]
    assert wrong == [], "workbench must never import runners"
    assert not {t for t in GRAPH["workbench.store"] if t.startswith("workbench.query")}
    assert "runners.launch.study" not in GRAPH["runners.launch.ray_backend"]
    assert "runners.launch.study" not in GRAPH["runners.launch.slurm_backend"]
    assert not {t for t in GRAPH["runners.launch.worker"] if t in ("runners.launch.study",
                                                             "runners.procedures.scaling_study")}


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the docstring nodes of a module, its classes and functions (prose, not paths)."""
    return {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and node.body and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)}


PATH_CALLS = {"Path", "PurePath", "join", "joinpath", "glob", "rglob", "iglob", "open", "listdir",
              "scandir", "makedirs", "mkdir", "exists", "isdir", "isfile"}


def _called(call: ast.Call) -> str:
    """The name of the function a call calls (`os.path.join(...)` -> "join")."""
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def _store_names(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, text) of string constants that name a store file, or a store folder in a path
    (an operand of `/` or of a path function, or a text with a path separator beside it)."""
    skip, found = _docstrings(tree), []
    for node in ast.walk(tree):
        operands = []
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            operands = [node.left, node.right]
        elif isinstance(node, ast.Call) and _called(node) in PATH_CALLS:
            operands = list(node.args)
        found += [(v.lineno, v.value) for v in operands
                  if isinstance(v, ast.Constant) and v.value in STORE_FOLDERS]
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            text = node.value
            if any(name in text for name in STORE_FILES) or \
                    any(f"{d}/" in text or f"/{d}" in text for d in STORE_FOLDERS):
                found.append((node.lineno, text[:60]))
    return found


def test_the_layout_check_sees_a_literal_path():
    tree = ast.parse('p = root / "logs"\nq = open(root / "runs" / rid / "run.json")\n'
                     'r = os.path.join(root, "index")\ns = frame.get("runs")\n')
    assert sorted(text for _, text in _store_names(tree)) == ["index", "logs", "run.json", "runs"]


def test_only_the_store_names_its_files_and_folders():
    offenders = [f"{name}:{line}: {text!r}" for name, tree in TREES.items()
                 if name not in LAYOUT_OWNERS for line, text in _store_names(tree)]
    assert offenders == []


def test_the_files_that_did_several_jobs_are_short():
    paths = ["workbench/views/selection.py", "runners/launch/study.py",
             *(str(p.relative_to(ROOT)) for p in sorted((ROOT / "runners/cli").glob("*.py")))]
    assert len(paths) > 4  # the command line's modules are found
    for path in paths:
        lines = len((ROOT / path).read_text().splitlines())
        assert lines < LONG_FILE, f"{path} has {lines} lines"


def test_no_analysis_is_computed_on_the_training_side():
    """The analysis commands print what workbench.results returns: no module of runners uses
    the scoring, comparison or budget functions itself."""
    analysis = {"workbench.scoring", "workbench.compare", "workbench.budget", "workbench.cubes"}
    users = sorted(name for name, targets in GRAPH.items()
                   if name.startswith("runners.cli") and targets & analysis)
    assert users == []


# The views, the served app and the CLI reach the analysis through workbench.results only
# (Results, its result objects and its steps, workbench/result_steps.py: issue 41). The workbench
# modules they may import besides it, and why; every other one (query, run_index, scope, cubes,
# scoring, compare, sequential, budget, ladder, noise_floor, sensitivity, early_stopping,
# tuning, ...) is analysis, reached through Results.
FRONT_DOOR = "workbench.results"
SURFACES = ("workbench.views", "workbench.app", "runners.cli")
SURFACES_MAY_IMPORT = {
    "workbench": "the package: open() and the few types a notebook needs",
    FRONT_DOOR: "the front door: Results, its result objects and steps, their constants",
    "workbench.store": "where a store is: open or create it, its documents; no analysis",
    "workbench.spec": "the contracts (RunConfig, StudySpec, Target, check_relax)",
    "workbench.records": "the record schema: column and field names, statuses",
    "workbench.errors": "UserError",
    "workbench.catalog": "the built-in workloads, their targets and noise floors, as data",
    "workbench.csvout": "formula-safe CSV of a table",
    "workbench.holdings": "which kinds of runs a store holds: which tabs a page shows",
    "workbench.costs": "a metric family of one view (Costs): pure functions of its frames",
    "workbench.curves": "a metric family of one view (Early ranking): pure functions",
    "workbench.hparams": "a metric family of one view (Hyperparameters): pure functions",
    "workbench.robustness": "a metric family of one view (Robustness): pure functions",
    "workbench.scaling": "a metric family of one view (Scaling): pure functions",
    "workbench.app": "the served dashboard (`pacebench serve`)",
    "workbench.report": "the HTML report (`pacebench report`)",
    "workbench.lazy_tabs": "the dashboard's lazily drawn tabs",
    "workbench.figures": "figures for papers",
    "workbench.importers": "doors into a store (`import-algoperf`, `import-table`)",
    "workbench.transfer": "a door into a store (`merge`, `export`, `import-parquet`)",
}


def _front_door_offenders(graph: dict[str, set[str]]) -> list[str]:
    """'<surface> imports <module>' for each import of a workbench module by a view, the app
    or the CLI that is neither another view nor in SURFACES_MAY_IMPORT."""
    def allowed(target: str) -> bool:
        return target.startswith("workbench.views") or any(
            target == m or target.startswith(f"{m}.") and m != "workbench"
            for m in SURFACES_MAY_IMPORT)
    return sorted(f"{name} imports {target}" for name, targets in graph.items()
                  if name.startswith(SURFACES) for target in targets
                  if target.startswith("workbench") and not allowed(target))


def test_the_front_door_check_sees_a_view_reaching_around_results():
    """A view that imports workbench.query (or a submodule of an analysis module, or names it
    in a function) is reported; one that imports Results and the store is not."""
    source = ("from workbench import query\nfrom workbench.results import Results\n"
              "from workbench.store import open_store\n"
              "def f():\n    from workbench.scoring import study_times\n")
    graph = {"workbench.views.status": {t for node in ast.walk(ast.parse(source))
                                        for t in _imported("workbench.views.status", node)},
             "workbench.scoring": {"workbench.query"}}  # not a surface: free to
    assert _front_door_offenders(graph) == ["workbench.views.status imports workbench.query",
                                            "workbench.views.status imports workbench.scoring"]


def test_views_and_the_cli_reach_the_analysis_through_results_only():
    assert _front_door_offenders(GRAPH) == []
    users = {name for name, targets in GRAPH.items() if FRONT_DOOR in targets}
    assert "workbench.views.selection" in users and "runners.cli.analysis" in users


def test_no_function_is_longer_than_sixty_lines():
    long = []
    for name, tree in TREES.items():
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > LONG_FUNCTION and (name, node.name) not in ALLOWED_LONG:
                    long.append(f"{name}.{node.name}: {length} lines")
    assert long == []


@pytest.mark.parametrize("command", ["score", "rank", "budget", "compare"])
def test_analysis_commands_do_not_load_the_dashboard_libraries(command, tmp_path):
    """`pacebench score`, `rank`, `budget` and `compare` import no panel, bokeh or holoviews
    (nor torch)."""
    from workbench.testing import make_store

    make_store(tmp_path / "s", algorithms=("adamw", "sgd"), workloads=("digits_mlp",),
               studies=1, trials=3)
    args = [command, "--store", str(tmp_path / "s")]
    args += ["--algorithms", "adamw,sgd"] if command == "compare" else []
    script = ("import sys\nfrom runners.cli import main\n"
              f"code = main({args!r})\n"
              "heavy = sorted(m for m in ('panel', 'bokeh', 'holoviews', 'torch') "
              "if m in sys.modules)\n"
              "print('LOADED', heavy, 'CODE', code)\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         cwd=ROOT, check=True).stdout
    assert "LOADED [] CODE 0" in out, out


def test_the_selection_imports_no_panel():
    """The dashboard's filters and derived values compute without the widget library."""
    tree = ast.parse(MODULES["workbench.views.selection"].read_text())
    imported = {alias.name.split(".")[0] for node in ast.walk(tree)
                if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and node.module}
    assert "panel" not in imported and "numpy" in imported  # (the second: the walk works)
