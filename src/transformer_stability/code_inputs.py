"""The package source files a workflow script runs, so that rules can list them as inputs.

Snakemake reruns a job when an input is newer than its outputs. Listing the package modules a
rule's script imports (transitively, within this package) as that rule's inputs makes reruns
follow code edits precisely: editing `apjn/measure.py` reruns the APJN measurements and nothing
else, editing a figure module reruns only its plots. Imports are read statically (`ast`), so
nothing is imported to find them and a module imported inside a function counts too. What a
file imports is kept beside the package's bytecode, keyed by the file's content, since every
Snakemake start (each dry run) asks for it and parsing every module cost half a second.

Snakemake also reruns a job whose set of input paths changed, so a file inside the working
directory (the checkout, where a run starts) is named relative to it: a moved or copied checkout
keeps every job's inputs and replans nothing.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import importlib.util
import json
import os
import tempfile
from functools import cache
from pathlib import Path

PACKAGE = "transformer_stability"


# Modules that describe a job but never compute a value of its tables. The table models (the
# shared `tables` and each study's `tables`, a module or a package of them), which every job
# that writes a table imports, and the registry that finds them by path (which would otherwise
# pull in every figure module): tightening a model reruns no measurement; the tables already
# written are checked again by the jobs that read them. The cost models (`work` and each study's
# `costs`), which set the cluster's time and memory requests, how a sweep's items are dealt
# into chunks and how many segments a long training is cut into: a sweep recut into other chunks
# or trained in other segments writes the same tables (tests/test_reproducibility.py,
# tests/test_apjn_train.py), so recalibrating a request reruns nothing.
def _describes_only(name: str) -> bool:
    parts = name.split(".")[1:]
    return name in {f"{PACKAGE}.registry", f"{PACKAGE}.work"} or bool(
        {"tables", "costs"} & set(parts)
    )


def _parsed_imports(source: bytes, path: Path, module: str) -> frozenset[str]:
    """Modules of this package that `source` (of file `path`, module `module`) imports."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source, filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative import: resolve against the importing module's package
                parts = module.split(".")[: -node.level] if module else []
                base = ".".join([*parts, base] if base else parts)
            found.add(base)
            # `from package import module` imports a module, not a name
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return frozenset(name for name in found if name == PACKAGE or name.startswith(f"{PACKAGE}."))


def _store_path() -> Path:
    return _package_root() / "__pycache__" / "code_inputs.json"


@cache
def _store() -> dict[str, list]:
    """The imports found by earlier starts: {"module path": [content digest, imports]}."""
    try:
        return json.loads(_store_path().read_text())
    except (OSError, ValueError):
        return {}


_unsaved: set[str] = set()  # keys parsed since the store was last written


def _save_store() -> None:
    """Write the store, if a file was parsed since it was last written, atomically (starts
    running side by side each write a whole one); where the package's folder is read-only,
    nothing is kept and the next start parses again."""
    if not _unsaved:
        return
    _unsaved.clear()
    path = _store_path()
    with contextlib.suppress(OSError):
        path.parent.mkdir(exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False) as handle:
            json.dump(_store(), handle)
        os.replace(handle.name, path)


@cache
def _imports(path: Path, module: str) -> frozenset[str]:
    """Modules of this package that the source file `path` (module `module`) imports. Cached:
    one Snakemake start asks for the closures of some 50 rules, which share most modules, and
    stored by content for the next start (written once per request, `_save_store`)."""
    source = path.read_bytes()
    digest = hashlib.sha1(source).hexdigest()
    key = f"{module} {path}"
    stored = _store().get(key)
    if stored is not None and stored[0] == digest:
        return frozenset(stored[1])
    found = _parsed_imports(source, path, module)
    _store()[key] = [digest, sorted(found)]
    _unsaved.add(key)
    return found


@cache
def _package_root() -> Path:
    spec = importlib.util.find_spec(PACKAGE)
    assert spec is not None and spec.origin is not None, f"{PACKAGE} is not installed"
    return Path(spec.origin).parent


@cache
def _module_file(name: str) -> Path | None:
    """The file of module `name` of this package; None for a name that is not a module."""
    parts = name.split(".")[1:]
    candidates = [Path(*parts, "__init__.py")]
    if parts:
        candidates.append(Path(*parts[:-1], f"{parts[-1]}.py"))
    return next((_package_root() / c for c in candidates if (_package_root() / c).is_file()), None)


def _with_parents(name: str) -> list[str]:
    """A module and the packages above it, which Python imports first."""
    parts = name.split(".")
    return [".".join(parts[: i + 1]) for i in range(len(parts))]


@cache
def module_closure(*modules: str) -> tuple[str, ...]:
    """Every package module that importing `modules` executes, sorted."""
    seen: set[str] = set()
    todo = [parent for name in modules for parent in _with_parents(name)]
    while todo:
        name = todo.pop()
        if name in seen or _describes_only(name):
            continue
        path = _module_file(name)
        if path is None:  # an imported name, not a module (`from pkg.mod import func`)
            continue
        seen.add(name)
        todo.extend(p for dep in _imports(path, name) for p in _with_parents(dep))
    return tuple(sorted(seen))


def as_input(path: str | Path) -> str:
    """`path` relative to the working directory if it lies inside it, else as given."""
    return _relative_to(str(path), os.getcwd())


@cache
def _relative_to(path: str, cwd: str) -> str:
    here, absolute = Path(cwd).resolve(), Path(path).resolve()
    return os.path.relpath(absolute, here) if absolute.is_relative_to(here) else path


def module_sources(*modules: str) -> list[str]:
    """Source files of `modules` and of every package module they import."""
    closure = module_closure(*modules)
    _save_store()
    return [as_input(_module_file(name)) for name in closure]


def script_sources(script: str | Path) -> list[str]:
    """Source files of the package modules a workflow script imports (the script itself is
    Snakemake's own `code` rerun trigger)."""
    return module_sources(*sorted(_imports(Path(script), "")))
