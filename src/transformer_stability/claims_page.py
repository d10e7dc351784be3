"""The claims of a results tree as pages a reader opens: an HTML table for the report's landing
page (`make report`) and a Markdown page for docs/results.md (`make results-page`: the claims and
the CPU time of the heavy rules), rendered from results/claims.csv and results/benchmarks/ as the
run wrote them, so that no number of a run is typed by hand.

    python -m transformer_stability.claims_page results docs/results.md
"""

from __future__ import annotations

import argparse
import html
import os
import platform
import subprocess
from datetime import date
from pathlib import Path

import pandas as pd

from transformer_stability.claims import HOLDS, NOT_RUN, Claims
from transformer_stability.io import atomic_path, read_table

COLUMNS = tuple(Claims.to_schema().columns)  # the claims' own, in the model's order
_VERDICT_CLASS = {HOLDS: "holds", NOT_RUN: "not-run"}  # anything else: does not hold


def _cell(value: object) -> str:
    return "" if pd.isna(value) else str(value)


def html_table(claims: pd.DataFrame) -> str:
    """The claims as an HTML table, verdicts coloured (the report's landing page)."""
    head = "".join(f"<th>{name}</th>" for name in COLUMNS)
    rows = []
    for _, row in claims.iterrows():
        verdict = _VERDICT_CLASS.get(row["verdict"], "fails")
        cells = "".join(f"<td>{html.escape(_cell(row[name]))}</td>" for name in COLUMNS)
        rows.append(f'<tr class="verdict-{verdict}">{cells}</tr>')
    return f'<table class="claims"><tr>{head}</tr>\n' + "\n".join(rows) + "\n</table>\n"


def _markdown_cell(value: object) -> str:
    return _cell(value).replace("|", "\\|").replace("\n", " ")


def markdown_page(claims: pd.DataFrame, stamp: str) -> str:
    """docs/results.md: the claims of the reference run under the stamp that names it."""
    counts = claims["verdict"].value_counts()
    tally = ", ".join(f"{v} {counts[v]}" for v in counts.index)
    lines = [
        "# Claims of the reference run",
        "",
        f"Rendered from `results/` by `make results-page` ({stamp}). Do not edit: the numbers",
        "are the run's. docs/<study>.md explains each statistic and criterion.",
        "",
        f"{len(claims)} claims by verdict: {tally}.",
        "",
        "| " + " | ".join(COLUMNS) + " |",
        "|" + " --- |" * len(COLUMNS),
    ]
    for _, row in claims.iterrows():
        lines.append("| " + " | ".join(_markdown_cell(row[n]) for n in COLUMNS) + " |")
    return "\n".join(lines) + "\n"


def stamp(root: Path = Path(".")) -> str:
    """'commit abc1234, 2026-12-01, <machine>': which code made the page, when and where."""
    commit = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    machine = f"{platform.node()} ({os.cpu_count()} cores, {platform.machine()})"
    return f"commit {commit or 'unknown'}, {date.today().isoformat()}, {machine}"


def write_html(claims_csv: Path, page: Path) -> None:
    """The landing page's claims fragment: the table, or where the claims are not in this
    results tree, how to compute them."""
    if claims_csv.exists():
        text = html_table(read_table(claims_csv, Claims))
    else:
        text = (
            f"<p>This results tree holds no <code>{claims_csv}</code>: "
            "<code>snakemake results/claims.csv</code> tests the claims on its tables.</p>\n"
        )
    with atomic_path(page) as tmp:
        tmp.write_text(text)


def cpu_times(benchmarks: Path) -> pd.DataFrame:
    """CPU and wall seconds per folder of Snakemake benchmark records (results/benchmarks/: a
    sweep's folder holds its chunk jobs, a study's folder its single-job rules), summed over
    the jobs."""
    records = [
        pd.read_csv(path, sep="\t").assign(folder=f"{path.parent.name}/")
        for path in sorted(benchmarks.glob("*/*.tsv"))
    ]
    if not records:
        return pd.DataFrame(columns=["folder", "jobs", "cpu_s", "wall_s"])
    table = pd.concat(records).groupby("folder")
    return pd.DataFrame(
        {"jobs": table.size(), "cpu_s": table["cpu_time"].sum(), "wall_s": table["s"].sum()}
    ).reset_index()


def markdown_times(times: pd.DataFrame) -> str:
    """The CPU-time section of docs/results.md."""
    lines = [
        "## CPU time of the heavy jobs",
        "",
        "Summed over the jobs of each folder of `results/benchmarks/` (a sweep's folder holds its",
        "chunk jobs, a study's folder its single-job rules). Wall seconds include waiting for a",
        "core where jobs ran side by side.",
        "",
        "| benchmarks | jobs | CPU s | wall s |",
        "| --- | --- | --- | --- |",
    ]
    for row in times.itertuples():
        lines.append(f"| `{row.folder}` | {row.jobs} | {row.cpu_s:.0f} | {row.wall_s:.0f} |")
    lines.append(f"| all | {times['jobs'].sum()} | {times['cpu_s'].sum():.0f} | |")
    return "\n".join(lines) + "\n"


def write_markdown(results: Path, page: Path) -> None:
    """docs/results.md from a run's results tree, stamped with the code, date and machine."""
    claims = markdown_page(read_table(results / "claims.csv", Claims), stamp())
    text = claims + "\n" + markdown_times(cpu_times(results / "benchmarks"))
    with atomic_path(page) as tmp:
        tmp.write_text(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", type=Path, nargs="?", default=Path("results"))
    parser.add_argument("page", type=Path, nargs="?", default=Path("docs/results.md"))
    args = parser.parse_args()
    write_markdown(args.results, args.page)


if __name__ == "__main__":
    main()
