"""The shape of the code: arrows that run one way, one owner of the store's layout, short files
and functions (what each import loads: test_import_weight.py).

The arrows between packages are import-linter's contracts in pyproject.toml, checked here by
running `lint-imports`; the few rules it cannot state read imports from the source (the AST),
inside functions too: an import hidden in a function is still an arrow between two modules.
"""
from __future__ import annotations

import ast
import os
import subprocess
import sys
import tomllib
from pathlib import Path

from workbench import records as R

from locations import REPO

ROOT = REPO
PACKAGES = ("workbench", "runners")
LONG_FUNCTION = 60  # lines
LONG_FILE = 350     # lines, for the files that used to do several jobs at once
MAX_FILE = 600      # lines, for every module of runners/ and workbench/
MAX_TOP_MODULES = 12  # .py modules at the top of runners/ (the rest lives in its wings)
ALLOWED_LONG: set[tuple[str, str]] = set()  # (module, function) allowed over LONG_FUNCTION
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


LINT_IMPORTS = ("import sys\nfrom importlinter.cli import lint_imports_command\n"
                "sys.exit(lint_imports_command())")


def _lint_imports(cwd: Path, *config: str) -> subprocess.CompletedProcess:
    """`lint-imports` run in `cwd` (its pyproject.toml's contracts, or `config`), reading the
    packages found there (not an installed copy)."""
    return subprocess.run([sys.executable, "-c", LINT_IMPORTS, "--no-cache", *config],
                          cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(cwd)})


def test_the_import_contracts_hold():
    """pyproject.toml's import-linter contracts (imports inside functions count): runners'
    wings import one way, workbench never imports runners, no circles."""
    out = _lint_imports(ROOT)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "0 broken" in out.stdout


def test_the_contracts_name_the_wings_in_order():
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    layers = [c["layers"] for c in contracts["contracts"] if c["type"] == "layers"]
    assert ["runners.cli", "runners.procedures", "runners.launch", "runners.run",
            "runners.algoperf"] in layers
    forbidden = {(s, f) for c in contracts["contracts"] if c["type"] == "forbidden"
                 for s in c["source_modules"] for f in c["forbidden_modules"]}
    assert ("workbench", "runners") in forbidden
    assert {("runners.algorithms", "runners.launch"), ("runners.workloads", "runners.cli"),
            ("runners.data", "runners.launch")} <= forbidden
    assert any(c["type"] == "acyclic_siblings" for c in contracts["contracts"])


def test_the_import_checker_sees_an_import_inside_a_function(tmp_path):
    """The same kind of contract on a two-module package whose lower layer imports the upper
    one in a function body: lint-imports reports it broken."""
    package = tmp_path / "wings"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "top.py").write_text("import wings.low\n")
    (package / "low.py").write_text("def f():\n    import wings.top\n")
    (tmp_path / "contracts.toml").write_text(
        '[tool.importlinter]\nroot_packages = ["wings"]\n\n[[tool.importlinter.contracts]]\n'
        'name = "top over low"\ntype = "layers"\nlayers = ["wings.top", "wings.low"]\n')
    out = _lint_imports(tmp_path, "contracts.toml")
    assert out.returncode == 1 and "BROKEN" in out.stdout, out.stdout + out.stderr
    assert "wings.low -> wings.top" in out.stdout


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


def test_no_module_is_over_six_hundred_lines():
    long = {name: len(path.read_text().splitlines()) for name, path in MODULES.items()}
    assert len(long) > 100  # the modules are found
    assert {name: n for name, n in long.items() if n > MAX_FILE} == {}


def test_runners_keeps_few_modules_at_its_top():
    top = sorted(p.name for p in (ROOT / "runners").glob("*.py"))
    assert "__init__.py" in top and len(top) <= MAX_TOP_MODULES, top


def test_no_function_is_longer_than_sixty_lines():
    """In runners/, workbench/ and the benchmarks."""
    long = []
    benchmarks = {f"benchmarks.{p.stem}": ast.parse(p.read_text(), str(p))
                  for p in sorted((ROOT / "benchmarks").glob("*.py"))}
    assert benchmarks  # the benchmarks are found
    for name, tree in {**TREES, **benchmarks}.items():
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > LONG_FUNCTION and (name, node.name) not in ALLOWED_LONG:
                    long.append(f"{name}.{node.name}: {length} lines")
    assert long == []


def test_the_selection_imports_no_panel():
    """The dashboard's filters and derived values compute without the widget library."""
    tree = ast.parse(MODULES["workbench.views.selection"].read_text())
    imported = {alias.name.split(".")[0] for node in ast.walk(tree)
                if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and node.module}
    assert "panel" not in imported and "numpy" in imported  # (the second: the walk works)
