"""The tests' own layout (tests/README.md): every test file in a layer folder, browser tests only
in tests/browser/, and no two test files of one name (pytest imports them by base name)."""
from __future__ import annotations

from collections import Counter

from locations import TESTS

LAYERS = ("unit", "integration", "browser")


def _test_files():
    return sorted(TESTS.rglob("test_*.py"))


def test_every_test_file_is_in_a_layer_and_unit_tests_in_an_area():
    files = _test_files()
    assert len(files) > 50  # (the walk finds them)
    misplaced = []
    for path in files:
        parts = path.relative_to(TESTS).parts
        if parts[0] == "fixtures":
            continue  # plug-in files the tests load, not tests
        if parts[0] not in LAYERS or (parts[0] == "unit") != (len(parts) == 3) or \
                (parts[0] != "unit" and len(parts) != 2):
            misplaced.append("/".join(parts))
    assert misplaced == [], ("put each test file in tests/unit/<area>/, tests/integration/ or "
                             f"tests/browser/: {misplaced}")


def test_test_file_names_are_unique_and_browser_tests_live_in_browser():
    names = Counter(path.name for path in _test_files())
    assert [n for n, k in names.items() if k > 1] == []
    mark = "@pytest.mark." + "browser"  # (split, or this file would match itself)
    marked = sorted(str(p.relative_to(TESTS)) for p in _test_files()
                    if mark in p.read_text() and p.parent.name != "browser")
    assert marked == []


def test_every_long_test_conftest_orders_first_exists():
    """conftest.LONG_TESTS names tests by function name: a renamed test would silently fall
    back to collection order (and maybe run last, one worker busy while the other idles)."""
    from conftest import LONG_TESTS

    defined = {line.split("(")[0][len("def "):] for path in _test_files()
               for line in path.read_text().splitlines() if line.startswith("def test_")}
    assert [name for name in LONG_TESTS if name not in defined] == []
