"""MNIST-1D (Greydanus and Kobak, ICML 2024): generated offline from its templates, cached, checked.

The `mnist1d` package's `make_dataset` draws every example from ten 1-D digit templates by a
documented procedure (pad, dilate, scale, translate, correlated and i.i.d. noise, shear, subsample
to 40 points) seeded by `seed`; datasets/mnist1d.md is the card. Its `get_dataset` would download a
pickle: never used here (nothing is unpickled).

We generate 20,000 examples (the package's defaults otherwise) and cut them, in the generated
order, into train 10,000 / validation 5,000 / test 5,000, so one validation example is 0.02 % of
accuracy. The arrays are cached as `mnist1d/mnist1d-<key>.npz` under the data root, next to a JSON
sidecar holding the generation parameters, the package version and the arrays' sha256 fingerprint;
a cache file that fails to load or to match its fingerprint is regenerated.
"""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import random
import tempfile
import zipfile
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from runners.data.shakespeare import data_root
from workbench.errors import UserError

__all__ = ["GENERATION", "SPLIT_SIZES", "FOLDER", "load_mnist1d_splits", "generate",
           "fingerprint", "cache_paths"]

FOLDER = "mnist1d"
# Overrides of mnist1d.data.get_dataset_args(); every other argument keeps the package's default
# and is recorded in the sidecar as generated. train_split is 0.5: the generator's "test" half
# becomes our validation and test splits.
GENERATION: dict[str, Any] = {"num_samples": 20_000, "train_split": 0.5, "seed": 42}
SPLIT_SIZES = {"train": 10_000, "validation": 5_000, "test": 5_000}
SPLITS = tuple(SPLIT_SIZES)


def _generator_args(overrides: Mapping[str, Any]) -> dict[str, Any]:
    """The generator's full argument dict: package defaults, `overrides` applied, url dropped."""
    from mnist1d.data import get_dataset_args

    args = get_dataset_args(as_dict=True)
    unknown = sorted(set(overrides) - set(args))
    if unknown:
        raise UserError(f"unknown MNIST-1D generation parameters {unknown}: valid are "
                        f"{', '.join(sorted(k for k in args if k != 'url'))}")
    args = {**args, **overrides}
    args.pop("url", None)  # the download path's address: not a generation parameter
    return args


def _split_sizes(args: Mapping[str, Any]) -> dict[str, int]:
    """Train / validation / test sizes the generator's arguments give (held-out half cut in two)."""
    n = (int(args["num_samples"]) // 10) * 10  # the generator makes num_samples // 10 per class
    n_train = int(n * float(args["train_split"]))
    held_out = n - n_train
    return {"train": n_train, "validation": held_out - held_out // 2, "test": held_out // 2}


def generate(overrides: Mapping[str, Any] = GENERATION) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """{split: (signals float32 (n, 40), labels int64 (n,))} freshly generated (seconds).

    The generator seeds NumPy's and Python's global random state; both are restored afterwards,
    so generating has no hidden effect on the caller.
    """
    from mnist1d.data import make_dataset
    from mnist1d.utils import ObjectView

    args = _generator_args(overrides)
    np_state, py_state = np.random.get_state(), random.getstate()
    try:
        data = make_dataset(ObjectView(dict(args)))
    finally:
        np.random.set_state(np_state)
        random.setstate(py_state)
    sizes = _split_sizes(args)
    held_x = np.asarray(data["x_test"], dtype=np.float32)
    held_y = np.asarray(data["y_test"], dtype=np.int64)
    n_val = sizes["validation"]
    return {"train": (np.asarray(data["x"], dtype=np.float32), np.asarray(data["y"], np.int64)),
            "validation": (held_x[:n_val], held_y[:n_val]),
            "test": (held_x[n_val:], held_y[n_val:])}


def fingerprint(splits: Mapping[str, tuple[np.ndarray, np.ndarray]]) -> str:
    """sha256 over the (signals, labels) bytes of train, validation, test in that order."""
    digest = hashlib.sha256()
    for name in SPLITS:
        for array in splits[name]:
            digest.update(np.ascontiguousarray(array).tobytes())
    return digest.hexdigest()


def _key(args: Mapping[str, Any]) -> str:
    """A short name for one set of generation arguments (the cache file's name)."""
    text = json.dumps(args, sort_keys=True, default=list)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def cache_paths(folder: Path, overrides: Mapping[str, Any] = GENERATION) -> tuple[Path, Path]:
    """(arrays .npz, sidecar .json) of the cache entry for these generation arguments."""
    stem = folder / f"mnist1d-{_key(_generator_args(overrides))}"
    return stem.with_suffix(".npz"), stem.with_suffix(".json")


def _read_cache(arrays: Path, sidecar: Path, args: Mapping[str, Any]
                ) -> dict[str, tuple[np.ndarray, np.ndarray]] | None:
    """The cached splits, or None when the entry is missing, unreadable or not these arrays."""
    try:
        meta = json.loads(sidecar.read_text())
        with np.load(arrays, allow_pickle=False) as npz:
            splits = {s: (npz[f"{s}_x"], npz[f"{s}_y"]) for s in SPLITS}
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, EOFError, TypeError, zipfile.BadZipFile) as err:
        print(f"MNIST-1D cache {arrays} unreadable ({type(err).__name__}): regenerating")
        return None
    if not isinstance(meta, dict) or meta.get("generation") != json.loads(json.dumps(args)):
        print(f"MNIST-1D cache {arrays}: other generation parameters recorded: regenerating")
        return None
    if meta.get("sha256") != fingerprint(splits):
        print(f"MNIST-1D cache {arrays}: arrays do not match their recorded sha256: regenerating")
        return None
    return splits


def _atomic_write(path: Path, write) -> None:
    """`write(file)` into a temporary file beside `path`, renamed into place when complete."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would hide a shared cache from other users
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)


def _write_cache(arrays: Path, sidecar: Path, args: Mapping[str, Any],
                 splits: Mapping[str, tuple[np.ndarray, np.ndarray]]) -> None:
    from importlib.metadata import version

    _atomic_write(arrays, lambda f: np.savez(f, **{f"{s}_{part}": a for s in SPLITS
                                                  for part, a in zip("xy", splits[s])}))
    meta = {"dataset": "MNIST-1D", "generator": f"mnist1d {version('mnist1d')} make_dataset",
            "generation": dict(args), "split_sizes": {s: len(splits[s][1]) for s in SPLITS},
            "sha256": fingerprint(splits), "card": "datasets/mnist1d.md"}
    _atomic_write(sidecar, lambda f: f.write((json.dumps(meta, indent=1) + "\n").encode()))


@contextlib.contextmanager
def _locked(folder: Path):
    """An exclusive lock on the cache folder: concurrent first runs generate once."""
    with open(folder / ".lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _writable(folder: Path) -> bool:
    """Whether files can be created in `folder` (made if missing): tried, not inferred from
    permission bits, which do not bind root."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            return True
    except OSError:
        return False


def load_mnist1d_splits(data_dir: str | Path | None = None,
                        overrides: Mapping[str, Any] = GENERATION,
                        ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """{split: (signals float32 (n, 40), labels int64 (n,))}, from the cache or generated.

    The cache is read from `<data root>/mnist1d/` (see runners.data.data_root) or the
    repository's datasets/cache/mnist1d/. A missing or bad entry is generated and written to
    `data_dir`/mnist1d when `data_dir` is given, else to the repository's cache: never into
    $PACEBENCH_DATA, which holds real data and may be a shared folder.
    """
    args = _generator_args(overrides)
    folders = list(dict.fromkeys([data_root(data_dir) / FOLDER, _repo_cache() / FOLDER]))
    for folder in folders:  # a read-only copy is fine to read
        arrays, sidecar = cache_paths(folder, overrides)
        if arrays.is_file():
            splits = _read_cache(arrays, sidecar, args)
            if splits is not None:
                return splits
    writable = [f for f in dict.fromkeys([*([Path(data_dir) / FOLDER] if data_dir else []),
                                          _repo_cache() / FOLDER]) if _writable(f)]
    if not writable:
        print(f"MNIST-1D: no writable cache folder among {', '.join(map(str, folders))}; "
              f"generating without caching")
        return generate(overrides)
    folder = writable[0]
    arrays, sidecar = cache_paths(folder, overrides)
    with _locked(folder):
        splits = _read_cache(arrays, sidecar, args)  # another process may have written it
        if splits is None:
            splits = generate(overrides)
            _write_cache(arrays, sidecar, args, splits)
    return splits


def _repo_cache() -> Path:
    """The repository's datasets/cache folder (the data root when nothing else is configured;
    installed from a wheel, the user's cache: runners.data.shakespeare.default_cache)."""
    from runners.data.shakespeare import default_cache

    return default_cache()
