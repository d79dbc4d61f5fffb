"""Plug-ins: algorithms and workloads from a file, a module or an installed package.

A plug-in is named the same way in every command that takes algorithms or workloads:

    path/to/file.py:Name      an object in a file (its folder joins the import path, so its
                              sibling files import); recorded with the file's sha256
    package.module:Name       an object in an importable module (e.g. torch.optim:RAdam)
    <entry-point name>        an installed distribution's entry point in the group
                              `pacebench.algorithms` or `pacebench.workloads` (its value is a
                              package.module:Name); `pacebench list` shows the installed ones

Algorithms are resolved by runners/algorithms/sources.py. Workloads are resolved here: the named
object is a **workload factory**, a class or callable with

    catalog                   one WorkloadSpec (workbench/spec.py: the catalog entry as data:
                              name, dataset, model knobs, loss, target, step hint, budget, eval
                              cadence, batch size) or a list of them (a base and its variants)
    factory(spec, device, data_dir) -> runners.api.Workload   the torch side of one entry

e.g. a subclass of runners.workloads.common.TensorWorkload with a class attribute `catalog`
(examples/spirals.py). Loading a factory registers its entries under their names, for this
process (workbench.catalog.register_plugin, runners.workloads.PLUGIN_BUILDERS); every run of
them records the factory's source and sha256 (RunConfig.workload_source, workload_sha256), so a
worker process loads the same code, and a file changed since the study was planned is refused.
"""
from __future__ import annotations

import contextlib
import importlib
import importlib.metadata
import importlib.util
import os
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from types import ModuleType
from typing import Any, Iterable, Iterator, Sequence

from workbench.digest import file_sha256
from workbench.errors import UserError

__all__ = ["PluginError", "ExitAtImport", "no_exit_at_import", "ALGORITHM_GROUP",
           "WORKLOAD_GROUP", "entry_points", "is_file_spec",
           "named_item", "import_object", "WorkloadSource", "resolve_workloads",
           "load_workloads", "use_workload_source", "with_workload_source", "load_file"]

ALGORITHM_GROUP = "pacebench.algorithms"
WORKLOAD_GROUP = "pacebench.workloads"


class PluginError(UserError):
    """A plug-in that cannot be found or loaded: its one line says what is valid."""


def entry_points(group: str) -> dict[str, str]:
    """{entry-point name: "package.module:Name"} of the installed plug-ins in `group`."""
    importlib.invalidate_caches()  # a distribution installed since the last look
    found = {}
    for ep in importlib.metadata.entry_points(group=group):
        found.setdefault(ep.name, ep.value)  # the first on the path wins, as for imports
    return found


def is_file_spec(where: str) -> bool:
    """Whether the part before ':' of a spec names a file (else a module)."""
    return where.endswith(".py") or "/" in where or "\\" in where


def named_item(text: str) -> tuple[str, str]:
    """(name, spec) of an item of `--algorithms` or `--workloads`: `name=<spec>`, or `<spec>`
    alone (name ""). The text is split at its first '=' unless the part before it holds '/',
    '\\' or ':' (the '=' is then inside a path or a spec), or the whole text names an existing
    file (dir=1/algo.py:Class): a path holding '=' is read whole, and NAME=<path> always works."""
    head, sep, rest = text.partition("=")
    if not sep or any(c in head for c in "/\\:"):
        return "", text
    where = text.rpartition(":")[0] if ":" in text else text
    if is_file_spec(where) and Path(where).expanduser().is_file():
        return "", text
    return head, rest


class ExitAtImport(BaseException):
    """os._exit called by a plug-in's top level (BaseException: its own handlers let it by)."""

    def __str__(self) -> str:
        return f"it called os._exit({self.args[0]}) at import"


@contextlib.contextmanager
def no_exit_at_import() -> Iterator[None]:
    """While a plug-in is imported, os._exit raises instead of ending the process at once, so
    a plug-in that exits at import is a one-line error (in a worker: a failed set-up), never a
    command that ends silently with nothing recorded."""
    real = os._exit

    def refuse(code: int = 0) -> None:
        raise ExitAtImport(code)

    os._exit = refuse
    try:
        yield
    finally:
        os._exit = real


def load_file(path: str | Path, module_name: str) -> ModuleType:
    """Run the Python file at `path` as the module `module_name`: the one file-to-module loader
    (plug-ins, AlgoPerf submissions, benchmarks in tests). The module is in sys.modules before
    its top level runs (dataclasses and pickling look it up) and leaves it again when that
    raises; whatever it raises is raised again (SystemExit too; os._exit as ExitAtImport)."""
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise PluginError(f"{path} cannot be imported as a module: give a Python file (.py)")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        with no_exit_at_import():
            spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(module_name, None)
        raise
    return module


def _import_file(path: Path) -> Any:
    module_name = f"pacebench_plugin_{file_sha256(path)[:12]}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    if str(path.parent) not in sys.path:
        sys.path.append(str(path.parent))  # its sibling files import
    try:
        return load_file(path, module_name)
    except KeyboardInterrupt:  # Ctrl-C stops the command, whatever it was importing
        raise
    except BaseException as err:  # anything its top level raises, SystemExit included
        raise PluginError(f"could not import {path}: {_raised(err)}") from err


def _raised(err: BaseException) -> str:
    """What an import raised, in one line: 'SystemExit: 0', 'ValueError: bad value'."""
    if isinstance(err, ExitAtImport):
        return str(err)
    text = " ".join(str(err).split())
    text = text if len(text) <= 200 else text[:197] + "..."
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


def _import_module(where: str, spec: str) -> Any:
    """The module `where` (of `spec`), imported; PluginError naming its file on any failure."""
    try:
        with no_exit_at_import():
            return importlib.import_module(where)
    except ImportError as err:
        raise PluginError(f"cannot import {where!r} for {spec!r}: {err} (is "
                          f"{where.split('.')[0]!r} installed?)") from None
    except KeyboardInterrupt:
        raise
    except BaseException as err:  # its top level raised something else, SystemExit included
        try:
            origin = importlib.util.find_spec(where).origin
        except BaseException:  # noqa: BLE001 - the file is a courtesy; the error is what counts
            origin = None
        where_from = f" ({origin})" if origin else ""
        raise PluginError(f"could not import {where!r}{where_from} for {spec!r}: "
                          f"{_raised(err)}") from err


def import_object(spec: str, sha256: str | None = None) -> Any:
    """The object that `spec` ("path.py:Name" or "package.module:Name") names; `sha256`: the
    file's hash when the study was planned (a changed file is refused)."""
    where, sep, name = spec.rpartition(":")
    if not sep or not name.isidentifier():
        raise PluginError(f"{spec!r} is not path/to/file.py:Name or package.module:Name")
    if is_file_spec(where):
        path = Path(where)
        if not path.is_file():
            raise PluginError(f"plug-in file not found: {path}")
        if sha256 is not None and file_sha256(path) != sha256:
            raise PluginError(f"{path} changed since the study was planned (sha256 "
                              f"{sha256[:12]}...): give the changed file another name, or plan "
                              "the study again")
        module = _import_file(path)
    else:
        if not all(part.isidentifier() for part in where.split(".")):
            raise PluginError(f"{where!r} (in {spec!r}) is neither a .py file nor a module path")
        module = _import_module(where, spec)
    if not hasattr(module, name):
        raise PluginError(f"{where} has no {name!r}")
    return getattr(module, name)


# -- workloads ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class WorkloadSource:
    """A workload factory: where it comes from and the catalog entries it registered."""

    spec: str                # "/abs/file.py:Factory" or "package.module:Factory"
    sha256: str | None       # of the file (None for a module)
    names: tuple[str, ...]   # its entries, base first


def _entries(factory: Any, spec: str) -> list:
    from workbench.spec import WorkloadSpec

    catalog = getattr(factory, "catalog", None)
    entries = [catalog] if isinstance(catalog, WorkloadSpec) else list(catalog or ())
    if not entries or not all(isinstance(e, WorkloadSpec) for e in entries):
        raise PluginError(f"{spec}: a workload factory needs `catalog`, a WorkloadSpec "
                          "(workbench.spec) or a list of them (see runners/plugins.py)")
    if not callable(factory):
        raise PluginError(f"{spec}: a workload factory must be callable as "
                          "factory(spec, device, data_dir)")
    return entries


def load_workloads(spec: str, sha256: str | None = None) -> WorkloadSource:
    """Import the factory `spec` names and register its entries (see the module doc)."""
    from runners.workloads import PLUGIN_BUILDERS
    from workbench.catalog import register_plugin

    where, _, name = spec.rpartition(":")
    if is_file_spec(where):
        path = Path(where).expanduser().resolve()
        spec = f"{path}:{name}"
        sha256 = sha256 or (file_sha256(path) if path.is_file() else None)
    factory = import_object(spec, sha256)
    entries = _entries(factory, spec)
    for entry in entries:
        try:
            register_plugin(entry, spec, sha256)
        except (KeyError, ValueError) as err:
            raise PluginError(f"{spec}: {err.args[0]}") from None
        PLUGIN_BUILDERS[entry.name] = factory
    return WorkloadSource(spec, sha256, tuple(e.name for e in entries))


def resolve_workloads(items: Iterable[str]) -> list[str]:
    """The workload names that `--workloads` items give, loading plug-ins on the way: a catalog
    name; an entry-point name or a factory spec (all its entries); `name=<factory spec>` (that
    one of its entries)."""
    from workbench.catalog import workload_names

    names: list[str] = []
    for item in items:
        chosen, spec = named_item(item)
        installed = entry_points(WORKLOAD_GROUP)
        if spec in workload_names() and not chosen:
            found = [spec]
        elif spec in installed or ":" in spec:
            source = load_workloads(installed.get(spec, spec))
            found = [chosen] if chosen else list(source.names)
            if chosen and chosen not in source.names:
                raise PluginError(f"{spec} has no workload {chosen!r}: it has "
                                  f"{', '.join(source.names)}")
        else:
            raise PluginError(
                f"unknown workload {item!r}: give a catalog name (pacebench list), an installed "
                f"plug-in ({', '.join(installed) or 'none installed'}), path/to/file.py:Factory "
                "or package.module:Factory, optionally as entry=<factory>")
        names += [n for n in found if n not in names]
    return names


def use_workload_source(config: Any) -> None:
    """Load the factory of a run's plug-in workload (RunConfig.workload_source) in this process,
    unless it is loaded already."""
    from workbench.catalog import plugin_source

    if config.workload_source and plugin_source(config.workload) != (config.workload_source,
                                                                      config.workload_sha256):
        load_workloads(config.workload_source, config.workload_sha256)


def with_workload_source(configs: Sequence[Any]) -> list:
    """The RunConfigs with their plug-in workload's source filled in, where one is loaded."""
    from workbench.catalog import plugin_source

    out = []
    for config in configs:
        source = plugin_source(config.workload)
        if source is not None and config.workload_source is None:
            config = replace(config, workload_source=source[0], workload_sha256=source[1])
        out.append(config)
    return out
