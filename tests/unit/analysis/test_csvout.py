"""CSV for spreadsheets (workbench/csvout.py) and `pacebench score --csv`."""
from __future__ import annotations

import csv
import io
import json
import math

import pandas as pd
import pytest

from runners.cli import main
from workbench.csvout import to_csv
from workbench.testing import make_store


def test_formula_cells_become_text_and_numbers_stay_numbers():
    frame = pd.DataFrame({"algorithm": ["=HYPERLINK(\"x\")", "+cmd", "-1+2", "@sum", "ok"],
                          "time": [1.5, math.inf, float("nan"), 2.0, 3.0]})
    rows = list(csv.reader(io.StringIO(to_csv(frame.rename(columns={"time": "=t"})))))
    assert rows[0] == ["algorithm", "'=t"]
    assert [r[0] for r in rows[1:]] == ["'=HYPERLINK(\"x\")", "'+cmd", "'-1+2", "'@sum", "ok"]
    assert [r[1] for r in rows[1:]] == ["1.5", "inf", "", "2.0", "3.0"]


def test_score_csv_says_what_score_json_says(tmp_path, capsys):
    store = make_store(tmp_path / "s", algorithms=("fast", "slow"), studies=3)
    assert main(["score", "--store", str(store.root), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert main(["score", "--store", str(store.root), "--csv"]) == 0
    rows = {r["algorithm"]: r for r in csv.DictReader(io.StringIO(capsys.readouterr().out))}
    assert set(rows) == set(result["scores"])
    for name, row in rows.items():
        assert float(row["score"]) == pytest.approx(result["scores"][name], abs=1e-6)
        assert int(row["studies"]) == result["studies"][name]
        for workload, seconds in result["time_to_target"][name].items():
            cell = row[f"time_to_target_s/{workload}"]
            assert (cell == "inf" and seconds is None) or float(cell) == pytest.approx(seconds)
    reference = result["speedups"]["reference"]
    assert float(rows["slow"][f"faster_by (vs {reference})"]) == pytest.approx(
        result["speedups"]["faster_by"]["slow"], abs=1e-6)
    with pytest.raises(SystemExit):  # one or the other
        main(["score", "--store", str(store.root), "--csv", "--json"])
