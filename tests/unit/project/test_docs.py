"""The docs say what the code says: the statuses table, and links between the docs."""
from __future__ import annotations

import re

from workbench.records import STATUS_TABLE

from locations import REPO

ROOT = REPO


def test_the_statuses_table_in_the_docs_is_the_code_s():
    text = (ROOT / "docs" / "reference.md").read_text()
    rows = {m.group(1): tuple(c.strip() for c in m.group(2).split(" | "))
            for m in re.finditer(r"^\| `(\w+)` \| (.+) \|$", text, re.MULTILINE)
            if m.group(1) in STATUS_TABLE}
    assert rows == {k: tuple(v) for k, v in STATUS_TABLE.items()}


def test_every_relative_link_in_the_readme_and_docs_resolves():
    broken = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
            if "://" not in target and not (page.parent / target).exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert not broken, broken


def test_the_option_tables_in_the_reference_are_the_parsers():
    import argparse
    import subprocess
    import sys

    from runners.cli import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    silent = [f"{name} {a.option_strings or a.dest}" for name, command in sub.choices.items()
              for a in command._actions if not a.help]
    assert not silent, f"options without help text: {silent}"
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "reference_options.py"),
                           "--check"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr



def _runners_layout() -> dict[str, set[str]]:
    """{folder under runners/ ("" for the top): the .py files docs/development.md's layout
    names there}. A line's names are its words before the description (two spaces apart); a
    line indented two spaces is in runners/ (a folder there opens it), four spaces in the
    folder opened last; deeper lines continue a description."""
    text = (ROOT / "docs" / "development.md").read_text()
    block = text[text.index("\nrunners/ "):text.index("\nscripts/")]
    named: dict[str, set[str]] = {}
    folder = ""
    for line in block.splitlines()[2:]:
        indent = len(line) - len(line.lstrip())
        words = re.split(r"\s{2,}", line.strip())[0].split()
        if indent == 2:
            folders = [w.rstrip("/") for w in words if w.endswith("/")]
            folder = folders[0] if len(folders) == 1 else ""
            if not folders:
                named.setdefault("", set()).update(w for w in words if w.endswith(".py"))
        elif indent == 4:
            named.setdefault(folder, set()).update(w for w in words if w.endswith(".py"))
    return named


def test_the_development_layout_names_every_runners_module_and_no_other():
    """Each module of runners/ and of its wings is in docs/development.md's layout, in its
    folder, and the layout names no module that is not there."""
    named = _runners_layout()
    runners = ROOT / "runners"
    for folder in ("", "run", "launch", "procedures", "algoperf"):
        files = {p.name for p in (runners / folder).glob("*.py") if p.name != "__init__.py"}
        assert named.get(folder, set()) == files, (folder, named.get(folder), files)
    layout = (ROOT / "docs" / "development.md").read_text()
    for folder in ("algorithms", "workloads", "data", "cli"):
        assert (runners / folder / "__init__.py").is_file() and f" {folder}/" in layout
