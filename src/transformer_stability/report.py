"""`make report`: the HTML report of the figures a run has made, for the configuration that run
recorded, without running any job. It opens on the claims the run tested (results/claims.csv).

Every run that has work to do records its resolved configuration (presets merged, defaults
filled) in results/config.yaml (the Snakefile's `onstart`). The report is built from that file and
from the figures that exist, so it describes the run that made them: after a one-figure run it
holds that figure, after a paper-scale run the paper's settings, and it never recomputes
anything with the default preset.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from transformer_stability.claims_page import Notes, write_html
from transformer_stability.io import atomic_path, read_only, read_only_error
from transformer_stability.registry import figure_files, study_figures
from transformer_stability.settings import leaves, read_settings, sidecar, value_at

if TYPE_CHECKING:
    from transformer_stability.plotting import FigureSpec

RECORD = Path("results/config.yaml")
REPORT = Path("results/report.html")
CLAIMS = Path("results/claims.csv")
TERMS = Path("results/claim_terms.csv")
CLAIMS_PAGE = Path("results/report/claims.html")  # workflow/report/workflow.rst includes it
STYLE = Path("workflow/report/report.css")  # beside the Snakefile


def record_config(config: dict[str, Any], path: str | Path = RECORD) -> None:
    """Write the resolved configuration of a run beside its results (atomically)."""
    with atomic_path(path) as tmp:
        tmp.write_text(yaml.safe_dump(config, sort_keys=False))


def made_figures(directory: Path) -> list[str]:
    """The figure files (PDF and PNG) present under directory/results/figures/."""
    figures = sorted((directory / "results" / "figures").glob("*.p[dn][fg]"))
    return [path.relative_to(directory).as_posix() for path in figures]


def _run_figures(config: dict[str, Any]) -> dict[str, FigureSpec]:
    """The figures of the studies `config` runs, by name."""
    return {f.name: f for study in config.get("studies", []) for f in study_figures(study)}


def missing(config: dict[str, Any], made: list[str]) -> dict[str, str]:
    """The figures of the run's studies that are not among the `made` files, by code, with the
    log of the job that draws them (a failed job's outputs are removed, its log stays)."""
    present = {Path(path).stem for path in made}
    figures = _run_figures(config).values()
    return {figure.code: figure.log for figure in figures if figure.name not in present}


def other_configuration(config: dict[str, Any], directory: Path, made: list[str]) -> dict[str, str]:
    """The figures among `made` whose tables were made under another configuration than the
    recorded `config` (results copied together from two runs), by code, with the first key
    that differs: their captions describe their own settings, the report's header does not."""
    figures = _run_figures(config)
    differing = {}
    for path in made:
        figure = figures.get(Path(path).stem)
        if figure is None or not path.endswith(".pdf") or not sidecar(directory / path).exists():
            continue
        for key, value in leaves(read_settings(directory / path)):
            recorded = value_at(config, key)
            if recorded != value:
                differing[figure.code] = f"{key}: {value!r} here, {recorded!r} in {RECORD}"
                break
    return differing


def report_command(snakefile: Path, directory: Path) -> list[str]:
    """The Snakemake call that reports the existing figures for the recorded configuration."""
    record = directory / RECORD
    if not record.exists():
        raise SystemExit(f"no {record}: run `make reproduce` (or snakemake) first")
    figures = made_figures(directory)
    if not figures:
        raise SystemExit(f"no figures under {directory / 'results/figures'}: nothing to report")
    blocked = read_only([directory / REPORT, directory / CLAIMS_PAGE])
    if blocked:
        raise SystemExit(read_only_error(blocked))
    recorded = yaml.safe_load(record.read_text())
    notes = Notes(missing(recorded, figures), other_configuration(recorded, directory, figures))
    page = directory / CLAIMS_PAGE
    write_html(directory / CLAIMS, directory / TERMS, page, notes, figure_files())
    command = [sys.executable, "-m", "snakemake", "-s", str(snakefile)]
    command += ["--directory", str(directory), "--configfile", str(record.resolve())]
    command += ["--report", str((directory / REPORT).resolve()), "--report-stylesheet"]
    command.append(str(snakefile.resolve().parent / STYLE))
    return [*command, "--", *figures]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--snakefile", type=Path, default=Path("Snakefile"))
    parser.add_argument("--directory", type=Path, default=Path("."))
    args = parser.parse_args()
    sys.exit(subprocess.run(report_command(args.snakefile, args.directory)).returncode)


if __name__ == "__main__":
    main()
