"""Where the tests' files are, whatever layer folder a test lives in (tests/unit/<area>/,
tests/integration/, tests/browser/): the checkout, tests/fixtures and tests/data. Importable from
every test as `from locations import ...` (pytest puts tests/, conftest.py's folder, on sys.path)."""
from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent          # the checkout: runners/, workbench/, notebooks/, docs/ ...
FIXTURES = TESTS / "fixtures"  # small committed stores, log trees and plug-in files
TEST_DATA = TESTS / "data"     # committed tables (ladder_finals.csv and its writer)
