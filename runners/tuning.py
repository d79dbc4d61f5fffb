"""Search spaces in AlgoPerf's JSON format and quasirandom trial draws from them.

A search space is either a dict of hyperparameters, each {"min", "max", "scaling": "log"|"linear"}
or {"feasible_points": [...]}, sampled with scrambled Halton sequences (as AlgoPerf's external
tuning ruleset), or a list of fixed points, sampled without replacement. Drawn values are exact
(never rounded), so a trial's hyperparameters are reproducible from the seed alone.

A study records, in every run's document, the space its trials were drawn from and where that
came from (ChosenSpace; workbench/records.py SEARCH_SPACE_FIELDS). Which sequence a study's
trials come from is its draw scheme's choice (draw_seed; workbench/spec.py DRAW_SCHEMES): under
scheme 2, the design's (workload, algorithm, search space, execution options), never the
study's name, so two studies of one design draw the same trials.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from workbench.errors import UserError
from workbench.spec import DRAW_SCHEMES, StudySpec, stable_hash, to_plain

__all__ = ["SearchSpaceError", "Range", "Choice", "SearchSpace", "draw_trials", "study_trials",
           "draw_seed", "study_points", "DRAW_WORDS", "ChosenSpace", "SPACE_ORIGINS",
           "SIDECAR_SUFFIX", "TUNE_RECORD_KIND", "sidecar_path", "file_origin"]

SCALINGS = ("linear", "log")
# Where a study's search space comes from: the algorithm class gives it ("declared"), a JSON
# file (its own, one beside it, or --search-space), or the optimizer's constructor signature
# (runners/algorithms/wrapper.py derived_search_space), or a file that `pacebench tune` wrote,
# known by its sidecar <file>.origin.json ("tuned": runners/procedures/tune.py).
SPACE_ORIGINS = ("declared", "file", "signature", "tuned")
SIDECAR_SUFFIX = ".origin.json"  # <space file> + this: the record of the tune that wrote it
# What `study --dry-run` says of a study's draw scheme (workbench/spec.py DRAW_SCHEMES)
DRAW_WORDS = {
    1: "draws: scheme 1, seeded by the study's name (the study began before scheme 2; "
       "--resume keeps its draws)",
    2: "draws: scheme 2, seeded by the design (workload, algorithm, search space, execution "
       "options), not the study's name: a study of the same design elsewhere holds the same "
       "trials (--reuse-from copies them)"}


class SearchSpaceError(UserError):
    """A search space that is not valid AlgoPerf JSON, or a draw it cannot satisfy."""


@dataclass(frozen=True)
class Range:
    """A continuous hyperparameter in [low, high], sampled uniformly in linear or log space."""

    name: str
    low: float
    high: float
    scaling: str

    def at(self, u: float) -> float:
        """The value at unit coordinate u in [0, 1)."""
        if self.scaling == "log":
            return math.exp(math.log(self.low) + u * (math.log(self.high) - math.log(self.low)))
        return self.low + u * (self.high - self.low)


@dataclass(frozen=True)
class Choice:
    """A hyperparameter taking one of a fixed list of values, each equally likely."""

    name: str
    points: tuple[Any, ...]

    def at(self, u: float) -> Any:
        return self.points[min(int(u * len(self.points)), len(self.points) - 1)]


@dataclass(frozen=True)
class SearchSpace:
    """Either `params` (a dict space, in file order) or `points` (a list space); never both."""

    params: tuple[Range | Choice, ...] = ()
    points: tuple[Mapping[str, Any], ...] = ()

    @property
    def is_list(self) -> bool:
        return bool(self.points)

    @property
    def names(self) -> list[str]:
        return [p.name for p in self.params] if self.params else list(self.points[0])

    @classmethod
    def from_json(cls, path: str | Path) -> "SearchSpace":
        """Parse the JSON file at `path` (errors name the file and the bad key)."""
        path = Path(path)
        try:
            obj = json.loads(path.read_bytes())
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            raise SearchSpaceError(f"{path}: not valid JSON ({err})") from None
        try:
            return cls.parse(obj)
        except SearchSpaceError as err:
            raise SearchSpaceError(f"{path}: {err}") from None

    @classmethod
    def parse(cls, obj: Any) -> "SearchSpace":
        """A search space from a decoded JSON object (a dict space or a list of points)."""
        if isinstance(obj, Mapping):
            if not obj:
                raise SearchSpaceError("empty search space: give at least one hyperparameter")
            return cls(params=tuple(_parse_param(k, v) for k, v in obj.items()))
        if isinstance(obj, list):
            return cls(points=_parse_points(obj))
        raise SearchSpaceError(f"a search space is a JSON object or a list of points, "
                               f"got {type(obj).__name__}")


@dataclass(frozen=True)
class ChosenSpace:
    """The search space a study draws an algorithm's trials from, as JSON (AlgoPerf's format),
    with its origin (one of SPACE_ORIGINS) and, for a file, the file's absolute path."""

    space: Mapping[str, Any] | list
    origin: str
    file: str | None = None

    def __post_init__(self) -> None:
        if self.origin not in SPACE_ORIGINS:
            raise SearchSpaceError(f"unknown search-space origin {self.origin!r}: valid are "
                                   f"{', '.join(SPACE_ORIGINS)}")
        SearchSpace.parse(self.space)  # a bad space fails when chosen, not when drawn from

    @classmethod
    def from_file(cls, path: str | Path) -> "ChosenSpace":
        """The space in the JSON file at `path` (errors name the file and the bad key); origin
        "tuned" when `pacebench tune` wrote it (file_origin), else "file"."""
        path = Path(path).resolve()
        SearchSpace.from_json(path)
        data = path.read_bytes()
        return cls(json.loads(data), file_origin(path, data), str(path))

    def search_space(self) -> SearchSpace:
        return SearchSpace.parse(self.space)

    def fields(self) -> dict[str, Any]:
        """The run document's search_space, search_space_origin and search_space_file."""
        return {"search_space": self.space, "search_space_origin": self.origin,
                "search_space_file": self.file}


TUNE_RECORD_KIND = "pacebench-tune"  # the sidecar's "kind" (runners/procedures/tune.py writes it)


def sidecar_path(path: str | Path) -> Path:
    """The sidecar of the search-space file at `path`: `<path>.origin.json`."""
    return Path(str(path) + SIDECAR_SUFFIX)


def file_origin(path: Path, data: bytes) -> str:
    """"tuned" when the sidecar of the space file at `path` (content `data`) is `pacebench
    tune`'s record of it and its space_sha256 is still the file's; "file" when there is no
    sidecar, or the file was edited since (a warning says so). A sidecar that is not such a
    record is a SearchSpaceError naming it."""
    import hashlib
    import warnings

    sidecar = sidecar_path(path)
    if not sidecar.is_file():
        return "file"
    try:
        record = json.loads(sidecar.read_bytes())
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise SearchSpaceError(f"{sidecar}: not valid JSON ({err}); remove it or run `pacebench "
                               "tune` again") from None
    if not isinstance(record, Mapping) or record.get("kind") != TUNE_RECORD_KIND:
        raise SearchSpaceError(f"{sidecar}: not a `pacebench tune` record (no \"kind\": "
                               f"\"{TUNE_RECORD_KIND}\"); remove it or run `pacebench tune` again")
    if record.get("space_sha256") != hashlib.sha256(data).hexdigest():
        warnings.warn(f"{path} was edited after `pacebench tune` wrote it (its sha256 is not the "
                      f"one {sidecar.name} records): its runs record origin file, not tuned",
                      stacklevel=2)
        return "file"
    return "tuned"


def _parse_param(name: str, spec: Any) -> Range | Choice:
    """One entry of a dict space: a min/max range or a list of feasible points."""
    if not isinstance(spec, Mapping):
        raise SearchSpaceError(f"hyperparameter {name!r}: expected an object with min/max/scaling "
                               f"or feasible_points, got {spec!r}")
    keys = set(spec)
    if keys == {"feasible_points"}:
        points = spec["feasible_points"]
        if not isinstance(points, list) or not points:
            raise SearchSpaceError(f"hyperparameter {name!r}: feasible_points must be a non-empty "
                                   f"list, got {points!r}")
        return Choice(name, tuple(points))
    if keys != {"min", "max", "scaling"}:
        raise SearchSpaceError(f"hyperparameter {name!r}: keys {sorted(keys)} are not valid; give "
                               f"exactly min, max and scaling, or only feasible_points")
    low, high, scaling = spec["min"], spec["max"], spec["scaling"]
    for key, value in (("min", low), ("max", high)):
        is_number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if not is_number or not math.isfinite(value):
            raise SearchSpaceError(f"hyperparameter {name!r}: {key} must be a finite number, "
                                   f"got {value!r}")
    if scaling not in SCALINGS:
        raise SearchSpaceError(f"hyperparameter {name!r}: scaling {scaling!r} is not valid; "
                               f"valid are {', '.join(SCALINGS)}")
    if low > high:
        raise SearchSpaceError(f"hyperparameter {name!r}: min {low} is above max {high}")
    if scaling == "log" and low <= 0:
        raise SearchSpaceError(f"hyperparameter {name!r}: log scaling needs min > 0, got {low}")
    return Range(name, float(low), float(high), scaling)


def _parse_points(obj: list) -> tuple[Mapping[str, Any], ...]:
    """A list space: non-empty, every point an object with the same hyperparameter names."""
    if not obj:
        raise SearchSpaceError("empty list of points: give at least one point")
    first = obj[0]
    for i, point in enumerate(obj):
        if not isinstance(point, Mapping) or not point:
            raise SearchSpaceError(f"point {i}: expected a non-empty object, got {point!r}")
        if set(point) != set(first):
            diff = sorted(set(point) ^ set(first))
            raise SearchSpaceError(f"point {i}: hyperparameter(s) {', '.join(diff)} differ from "
                                   f"point 0's ({', '.join(first)})")
    return tuple(dict(p) for p in obj)


def _halton_trials(space: SearchSpace, n: int, seed: int | list[int]) -> list[dict[str, Any]]:
    """The first n points of one scrambled Halton sequence, one dimension per hyperparameter
    (the first n points of a longer draw with the same seed are the same points). scipy.stats
    is imported here: at the module's top it cost every process that loads the algorithm
    sources (`pacebench run`, a spawned or Slurm worker) 1.2 to 1.6 s."""
    from scipy.stats import qmc

    unit = qmc.Halton(d=len(space.params), scramble=True,
                      rng=np.random.default_rng(seed)).random(n)  # (n, d) in [0, 1)
    return [{p.name: p.at(float(u)) for p, u in zip(space.params, row)} for row in unit]


def _study_seed(seed: int, study: int) -> int | list[int]:
    """The seed of study `study`'s sequence. Study 0 keeps the plain seed, which is what every
    plan of one study used before studies drew separately, so such studies resume unchanged."""
    return seed if study == 0 else [seed, study]


def draw_seed(scheme: int, name: str, workload: str, algorithm: str, ruleset: str,
              space: SearchSpace, execution: Mapping[str, Any]) -> int:
    """The seed of study_trials for `algorithm`'s trials on `workload` in study `name`: under
    draw scheme 1 the study's name and the algorithm's (the same points on every workload);
    under scheme 2 the design alone: workload, algorithm, ruleset, the space (its
    hyperparameters in file order: the Halton dimensions follow it) and `execution` (the
    execution options that change what a run computes, ExecutionOptions.identity)."""
    if scheme == 1:
        return int(stable_hash([name, algorithm], 8), 16)
    if scheme not in DRAW_SCHEMES:
        raise SearchSpaceError(f"unknown draw scheme {scheme!r}: valid are "
                               f"{', '.join(map(str, DRAW_SCHEMES))}")
    design = ["draws", scheme, workload, algorithm, ruleset, to_plain(space), dict(execution)]
    return int(stable_hash(design, 8), 16)


def study_points(space: SearchSpace | None, spec: StudySpec, algorithm: str, workload: str,
                 scheme: int) -> list[list[dict[str, Any]]]:
    """Each study's trials' hyperparameters of `algorithm` on `workload` in study `spec`,
    drawn by `scheme` (draw_seed); no space (self-tuning): one trial of its defaults each."""
    if space is None:
        return [[{}] for _ in range(spec.studies)]
    seed = draw_seed(scheme, spec.name, workload, algorithm, spec.ruleset, space,
                     spec.execution.identity())
    return study_trials(space, spec.studies, spec.trials, seed)


def draw_trials(space: SearchSpace, n: int, seed: int) -> list[dict[str, Any]]:
    """n trials' hyperparameters: Halton points of a dict space, or distinct points of a list."""
    return study_trials(space, 1, n, seed)[0]


def study_trials(space: SearchSpace, studies: int, trials: int,
                 seed: int) -> list[list[dict[str, Any]]]:
    """Trials for each study, different points in each.

    Trial t of study s depends on (space, seed, s, t) alone, never on how many studies or
    trials there are: a study extended from 5 trials to 10 keeps its first 5 points. Each study
    draws from a sequence of its own (_study_seed): a dict space the points of a scrambled
    Halton sequence in order; a list space its points without replacement, in a random order.
    """
    if studies < 1 or trials < 1:
        raise SearchSpaceError(f"need studies >= 1 and trials >= 1, got {studies} and {trials}")
    if not space.is_list:
        return [_halton_trials(space, trials, _study_seed(seed, s)) for s in range(studies)]
    if trials > len(space.points):
        raise SearchSpaceError(f"cannot draw {trials} trials without replacement from a list of "
                               f"{len(space.points)} points; ask for at most {len(space.points)}")
    return [[dict(space.points[i])
             for i in np.random.default_rng(_study_seed(seed, s)).permutation(
                 len(space.points))[:trials]]
            for s in range(studies)]
