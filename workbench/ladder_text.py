"""A ladder analysis (workbench.ladder.ladder_analysis) in words: the verdict sentence of each
candidate, the text `pacebench ladder --summary` prints, and the tables of losses, speedups and
tuning per rung.
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import pandas as pd

from workbench import tuning as T
from workbench.ladder_intervals import FRAGILE_CHANGE, INTERVAL_LEVEL

__all__ = ["verdict", "ladder_text", "tuning_table", "budget_text"]


def verdict(name: str, rungs: Sequence[Mapping[str, Any]], trend_entry: Mapping[str, Any],
            reference: str, level: float = INTERVAL_LEVEL) -> str:
    """One sentence on a candidate over the rungs: "faster ... at every rung", "slower ...",
    "not shown" (no interval excludes 1, or no intervals), with its speedups and the trend."""
    shown = [(r["name"], r["speedups"][name]) for r in rungs
             if name in r["speedups"] and r["speedups"][name]["value"] is not None]
    if not shown:
        return f"{name}: not shown (no rung with a speedup over {reference})"
    above = [n for n, s in shown if s["interval"] and s["interval"][0] is not None
             and s["interval"][0] > 1]
    below = [n for n, s in shown if s["interval"] and s["interval"][1] is not None
             and s["interval"][1] < 1]
    if len(above) == len(shown):
        head = f"faster than {reference} at every rung"
    elif len(below) == len(shown):
        head = f"slower than {reference} at every rung"
    elif above or below:
        parts = ([f"faster at {', '.join(above)}"] if above else []) + \
            ([f"slower at {', '.join(below)}"] if below else [])
        head = " and ".join(parts) + \
            (", not shown at the others" if len(above) + len(below) < len(shown) else "")
    else:
        head = "not shown" + ("" if any(s["interval"] for _, s in shown) else
                              " (no intervals: one seed; give --loss-noise)")
    values = ", ".join(f"{s['value']:.3f}x at {n}" for n, s in shown)
    return f"{name}: {head} ({values}){_trend_words(trend_entry, level)}."


def _trend_words(t: Mapping[str, Any], level: float) -> str:
    slope = t.get("slope_per_doubling")
    if slope is None:
        return "; no trend (one rung)"
    change = 100 * (2 ** slope - 1)
    words = f"; the speedup {'grows' if change >= 0 else 'shrinks'} by {abs(change):.1f} % " \
            "per doubling of model size"
    pair = t.get("interval")
    if pair is None:
        return words + " (no interval)"
    low, high = (100 * (2 ** v - 1) if v is not None else math.copysign(math.inf, k)
                 for v, k in zip(pair, (-1, 1)))
    sure = "" if low > 0 or high < 0 else ", not shown to change"
    return words + f" ({100 * level:.0f} % interval {low:+.1f} % to {high:+.1f} %{sure})"


def budget_text(budget: float) -> str:
    """A budget as it prints (JSON keys, tables): 3 significant digits, no trailing zeros:
    "16", "0.5", "1.23"."""
    return f"{float(f'{float(budget):.3g}'):g}"


def _budget_label(budget: float) -> str:
    return f"{budget_text(budget)}x"


def _value_text(value: float | None, below_floor: bool = False, digits: int = 3) -> str:
    if below_floor:
        return "undefined (below c)"
    return "n/a" if value is None else f"{value:.{digits}f}"


def _interval_text(pair: list | None, seeds: int, reference_seeds: int) -> str:
    if pair is None:
        return f"n/a ({min(seeds, reference_seeds)} seed)"
    low, high = ("inf" if v is None else f"{v:.3f}" for v in pair)
    return f"{low} to {high}"


def _loss_table(rung: Mapping[str, Any]) -> pd.DataFrame:
    budgets = sorted({row["budget"] for rows in rung["losses"].values() for row in rows})
    table = {}
    for algorithm, rows in rung["losses"].items():
        by = {row["budget"]: row for row in rows}
        table[algorithm] = [
            "-" if b not in by else
            f"{by[b]['mean']:.4f} ± {by[b]['sd']:.4f} ({by[b]['seeds']})" if by[b]["sd"]
            is not None else f"{by[b]['mean']:.4f} ({by[b]['seeds']})" for b in budgets]
    return pd.DataFrame(table, index=[_budget_label(b) for b in budgets]).T


def _speedup_table(rung: Mapping[str, Any]) -> pd.DataFrame:
    """One row per candidate: rung speedup, interval, time ratio, seeds, then one column per
    budget ("-" where the candidate has no run)."""
    rows, budgets = [], set()
    for algorithm, s in rung["speedups"].items():
        row = {"algorithm": algorithm,
               "speedup": _value_text(s["value"]) + (" *" if s["extrapolated"] else ""),
               "interval": _interval_text(s["interval"], s["seeds"], s["reference_seeds"]),
               "time ratio": _value_text(s["time_ratio"]) +
               (" *" if s.get("time_ratio_extrapolated") else ""),
               "time interval": "n/a" if s["time_ratio"] is None else
               _interval_text(s["time_ratio_interval"], s["seeds"], s["reference_seeds"]),
               "seeds": f"{s['seeds']} vs {s['reference_seeds']}"}
        for p in s["per_budget"]:
            budgets.add(p["budget"])
            row[_budget_label(p["budget"])] = _value_text(p["value"], p["below_floor"]) + \
                (" *" if p["extrapolated"] else "") + ("" if p.get("shared", True) else " (no ref)")
        rows.append(row)
    columns = list(rows[0])[:6] + [_budget_label(b) for b in sorted(budgets)] if rows else []
    return pd.DataFrame(rows, columns=columns).fillna("-")


def _fragility_lines(rung: Mapping[str, Any], ref: str) -> list[str]:
    """The leave-one-out line per candidate (flagged when fragile), or why there is none."""
    if rung.get("fragility") is None:
        return [f"fit fragility: n/a ({rung['fragility_note']})"] if rung.get("fragility_note") \
            else []
    lines = []
    for name, f in rung["fragility"].items():
        if f is None:
            continue
        value = rung["speedups"][name]["value"]
        moved = "undefined" if f["value_without"] is None else f"{f['value_without']:.3f}"
        change = "inf" if f["largest_log2_change"] is None else \
            f"{f['largest_log2_change']:.3f}"
        line = (f"fit fragility: {name} {value:.3f} -> {moved} with budget {f['budget']} left "
                f"out of {ref}'s fit (|log2 change| {change})")
        if f["fragile"]:
            line = "warning: fragile " + line[len("fit fragility: "):] + \
                (": more than its interval's half-width" if rung["speedups"][name]["interval"]
                 else f": more than {100 * FRAGILE_CHANGE:.0f} %")
        lines.append(line)
    return lines


def ladder_text(result: Mapping[str, Any]) -> str:
    """What `pacebench ladder --summary` prints: per rung the final losses, the fit, the
    speedups and time ratios with their intervals, the warnings; then the trend."""
    level = f"{100 * result['interval_level']:.0f} %"
    ref = result["reference"]
    lines = [f"ladder: reference {ref}; {level} bootstrap intervals over seeds and the fit "
             f"({result['draws']} draws, seed {result['bootstrap_seed']}); budgets in multiples "
             "of 20 tokens per non-embedding parameter"]
    for rung in result["rungs"]:
        params = f"{rung['non_embedding_params']:,} non-embedding parameters" + (
            f" ({rung['params']:,} in all)" if rung.get("params") else "")
        lines += ["", f"rung {rung['name']}: {params}",
                  "final validation loss, mean ± sd over seeds (seeds):",
                  _indent(_loss_table(rung).to_string())]
        fit = rung["fit"]
        if fit is not None:
            lines.append(f"fit of {ref}: L(D) = {fit['a']:.4g} D^-{fit['b']:.4f} + "
                         f"{fit['c']:.4f}, rmse {fit['rmse']:.4f} over {fit['points']} budgets")
        if rung["speedups"]:
            lines += [f"equal-loss speedup over {ref}: D_ref(L_X) / D, geometric mean over "
                      "budgets (* extrapolated beyond the fitted budgets); time ratio "
                      "T_ref(L_X) / T_X:",
                      _indent(_speedup_table(rung).to_string(index=False))]
        lines += _fragility_lines(rung, ref)
        lines += _tuning_lines(rung)
        lines += [f"warning: {w}" for w in rung["warnings"]]
    lines += _header_notes(result)
    if result["trend"]:
        lines += ["", "trend: change of log2(speedup) per doubling of non-embedding parameters"
                  " (least squares over rungs):"]
        for name, t in result["trend"].items():
            if t["slope_per_doubling"] is None:
                lines.append(f"  {name}: n/a ({t['rungs']} "
                             f"{'rung' if t['rungs'] == 1 else 'rungs'} with a finite "
                             "speedup; needs 2)")
                continue
            interval = "n/a" if t["interval"] is None else \
                _interval_text(t["interval"], 2, 2)
            lines.append(f"  {name}: {t['slope_per_doubling']:+.4f} per doubling ({level} "
                         f"interval {interval}; {t['rungs']} rungs)")
    if result.get("verdicts"):
        lines += ["", "verdicts:"] + [f"  {v}" for v in result["verdicts"].values()]
    return "\n".join(lines)


def tuning_table(rung: Mapping[str, Any]) -> pd.DataFrame:
    """The rung's tuning report as a table (text cells): per algorithm its sweep's trials, the
    chosen value of each hyperparameter, edges and bracketed."""
    rows = []
    for algorithm, e in rung.get("tuning_report", {}).items():
        edges = ", ".join(f"{hp} {v}" for hp, v in e["edge"].items() if v)
        rows.append({"algorithm": algorithm, "trials": e["trials"],
                     "chosen": ", ".join(f"{hp} {T.value_text(v)}"
                                         for hp, v in e["chosen"].items()) or "defaults",
                     "edge": edges or "none",
                     "bracketed": {True: "yes", False: "no", None: "n/a"}[e["bracketed"]]})
    return pd.DataFrame(rows, columns=["algorithm", "trials", "chosen", "edge", "bracketed"])


def _tuning_lines(rung: Mapping[str, Any]) -> list[str]:
    table = tuning_table(rung)
    if table.empty or not (table["trials"] > 0).any():  # no sweep at this rung: nothing judged
        return []
    return ["tuning (each sweep's best at an edge of its range, beyond the seeds' spread?):",
            _indent(table.to_string(index=False))]


def _header_notes(result: Mapping[str, Any]) -> list[str]:
    """Where the runs came from, the fit's budgets, the stated loss noise, the one-seed note."""
    lines = [""]
    origins = result.get("origins") or {}
    if set(origins) - {"pacebench"}:
        lines.append("runs: " + "; ".join(f"{n} from {k}" for k, n in origins.items()) +
                     " (imported rows: no steps or schedules to check)")
    if result.get("fit_budgets"):
        lines.append(f"the reference's fit uses budgets {', '.join(result['fit_budgets'])} "
                     "(--fit-budgets)")
    if result.get("loss_noise") is not None:
        lines.append(f"intervals: a parametric bootstrap with a stated loss noise of "
                     f"{result['loss_noise']:g} nats per run (--loss-noise)")
    if result.get("interval_note"):
        lines.append(result["interval_note"])
    return lines if len(lines) > 1 else []


def _indent(text: str) -> str:
    return "\n".join("  " + line for line in text.splitlines())
