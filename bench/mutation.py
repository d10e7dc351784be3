"""Mutation testing of a study's science modules with mutmut, on a throw-away copy of the tree.

How many deliberately wrong variants of the code (a changed constant, a flipped comparison, a
dropped term) the fast tests of the study catch. mutmut writes its mutants and state next to
the code it mutates, so the tree (tracked and untracked, not ignored files) is copied to a
temporary folder first: the checkout and its editable install stay untouched while it runs.

    make mutation STUDY=counting MODULES="theory rates"
    make mutation STUDY=shared MODULES="verdicts resampling" TESTS="verdicts report"
    python bench/mutation.py --study counting theory rates [--show] [--keep DIR]
    python bench/mutation.py --study numerics claims  # a package: each of its modules

Tests: the study's tests but the end-to-end ones (tests/test_<study>_*.py, not marked workflow,
the seconds-long ones marked slow included, or those matching `--tests`, e.g. `--tests theory
kernels` for two files); mutmut runs, for each mutant, only those that executed the mutated
function. The score counts timeouts as
killed (shown apart: a hang that is not the mutant's, like torch's thread pool in a forked
process, would look the same; hence mutmut's fork server) and untested mutants as
survivors. Mutants judged equivalent (no test can tell them
from the original) are listed with the reason in bench/mutation_equivalent.txt
(`<mutant name>  # why`); the score is given with and without them. Record scores in
bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import collections
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "src/transformer_stability"
EQUIVALENT = ROOT / "bench" / "mutation_equivalent.txt"
KILLED = {"killed", "timeout"}


def copy_tree(destination: Path) -> None:
    """The working tree as git sees it (tracked and untracked, not ignored files)."""
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"],
        cwd=ROOT,
        check=True,
        capture_output=True,
    ).stdout.split(b"\0")
    for name in filter(None, (entry.decode() for entry in listed)):
        source = ROOT / name
        if source.is_file():
            target = destination / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)


def mutmut_config(workdir: Path, modules: list[str], tests: list[str]) -> str:
    """The [tool.mutmut] table: mutate only `modules`, select from the study's fast tests.

    mutmut runs the tests inside its mutants/ folder, so everything the tests read beside the
    package (docs, workflow, configs) is copied there too. Workers fork from a fork server, not
    from the process that ran the suite: a fork after torch's thread pool has started hangs on
    its locks, and every mutant would then time out and be counted as killed.
    """

    def toml_list(items: list[str]) -> str:
        return "[" + ", ".join(f'"{item}"' for item in items) + "]"

    beside = sorted(entry.name for entry in workdir.iterdir() if entry.name not in {"src", "tests"})
    pytest_args = ["-p", "no:xdist", "-p", "no:cacheprovider", "-m", "not workflow", "-q"]
    return (
        "\n[tool.mutmut]\n"
        'source_paths = ["src/"]\n'
        f"also_copy = {toml_list(beside)}\n"
        f"only_mutate = {toml_list(modules)}\n"
        f"pytest_add_cli_args_test_selection = {toml_list(tests)}\n"
        f"pytest_add_cli_args = {toml_list(pytest_args)}\n"
        'process_isolation = "forkserver"\n'
    )


SHARED = "shared"  # --study shared: modules of the shared layer (the package's top level)


def module_paths(study: str, names: list[str]) -> list[str]:
    """The files to mutate: a module's, or every module's of a subpackage (`claims` when the
    study's claims are a package of modules)."""
    folder = PACKAGE if study == SHARED else f"{PACKAGE}/{study}"
    paths = []
    for name in (name.removesuffix(".py") for name in names):
        package = ROOT / folder / name
        if (package / "__init__.py").is_file():
            paths += sorted(path.relative_to(ROOT).as_posix() for path in package.rglob("*.py"))
        else:
            paths.append(f"{folder}/{name}.py")
    missing = [path for path in paths if not (ROOT / path).is_file()]
    if missing:
        sys.exit(f"no such module: {', '.join(missing)}")
    return paths


def study_tests(study: str, patterns: list[str]) -> list[str]:
    """The test files `tests/test_<study>_<pattern>.py` (pattern `*`: all of the study's), or
    `tests/test_<pattern>.py` for the shared layer."""
    prefix = "test_" if study == SHARED else f"test_{study}_"
    found = {path for pattern in patterns for path in ROOT.glob(f"tests/{prefix}{pattern}.py")}
    if not found:
        sys.exit(f"no tests/{prefix}{{{','.join(patterns)}}}.py")
    return sorted(str(path.relative_to(ROOT)) for path in found)


def equivalent_mutants() -> dict[str, str]:
    """Mutant name -> why it is judged equivalent."""
    if not EQUIVALENT.is_file():
        return {}
    judged = {}
    for line in EQUIVALENT.read_text().splitlines():
        name, _, reason = line.partition("#")
        if name.strip():
            judged[name.strip()] = reason.strip()
    return judged


def outcomes(workdir: Path) -> dict[str, str]:
    """Mutant name -> mutmut's status for it."""
    listing = subprocess.run(
        [sys.executable, "-m", "mutmut", "results", "--all", "true"],
        cwd=workdir,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    found = re.findall(r"^\s*(\S+__mutmut_\d+): (.+)$", listing, flags=re.MULTILINE)
    return {name: status.strip() for name, status in found}


def module_of(mutant: str) -> str:
    """`transformer_stability.counting.theory.x_f__mutmut_3` -> `counting/theory.py`."""
    return "/".join(mutant.rsplit(".", 1)[0].split(".")[1:]) + ".py"


def report(results: dict[str, str], judged: dict[str, str]) -> list[str]:
    """Per-module and total scores, raw and with the judged-equivalent mutants set aside."""
    lines = [
        "| module | mutants | killed | of which timed out | survived | score "
        "| score without equivalent |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    by_module: dict[str, list[str]] = collections.defaultdict(list)
    for mutant in results:
        by_module[module_of(mutant)].append(mutant)
    for module in [*sorted(by_module), "all"]:
        mutants = list(results) if module == "all" else by_module[module]
        killed = sum(results[m] in KILLED for m in mutants)
        counted = [m for m in mutants if m not in judged]
        killed_counted = sum(results[m] in KILLED for m in counted)
        timeouts = sum(results[m] == "timeout" for m in mutants)
        lines.append(
            f"| {module} | {len(mutants)} | {killed} | {timeouts} | {len(mutants) - killed} "
            f"| {killed / len(mutants):.1%} | {killed_counted / max(len(counted), 1):.1%} |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--study", required=True, help=f"apjn, numerics, counting or {SHARED} (the shared layer)"
    )
    parser.add_argument(
        "modules", nargs="+", help="module (or subpackage) names in the study's package"
    )
    parser.add_argument("--show", action="store_true", help="print each survivor's diff")
    parser.add_argument("--keep", type=Path, help="run in this folder and keep it")
    parser.add_argument("--max-children", type=int, default=2)
    parser.add_argument(
        "--tests",
        nargs="+",
        default=["*"],
        help="glob patterns after tests/test_<study>_ (default: all the study's test files)",
    )
    args = parser.parse_args()
    modules = module_paths(args.study, args.modules)
    tests = study_tests(args.study, args.tests)
    workdir = args.keep or Path(tempfile.mkdtemp(prefix="mutation-"))
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        copy_tree(workdir)
        with (workdir / "pyproject.toml").open("a") as pyproject:
            pyproject.write(mutmut_config(workdir, modules, tests))
        subprocess.run(
            [sys.executable, "-m", "mutmut", "run", "--max-children", str(args.max_children)],
            cwd=workdir,
            check=True,
        )
        results = outcomes(workdir)
        judged = equivalent_mutants()
        survivors = [m for m, status in results.items() if status not in KILLED]
        print("\n".join(report(results, judged)))
        print(f"\nsurvivors ({len(survivors)}; * = judged equivalent):")
        for mutant in survivors:
            mark = "*" if mutant in judged else " "
            print(f"{mark} {mutant}: {results[mutant]}")
            if args.show:
                shown = subprocess.run(
                    [sys.executable, "-m", "mutmut", "show", mutant],
                    cwd=workdir,
                    capture_output=True,
                    text=True,
                )
                print(shown.stdout)
    finally:
        if args.keep is None:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
