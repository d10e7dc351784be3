"""The claims of a results tree as pages a reader opens: an HTML table for the report's landing
page (`make report`) and a Markdown page for docs/results.md (`make results-page`), both rendered
from results/claims.csv as the run wrote it, so that no number of a run is typed by hand.

    python -m transformer_stability.claims_page results/claims.csv docs/results.md
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

COLUMNS = ("claim", "statement", "statistic", "value", "criterion", "verdict", "figure")
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
    tally = ", ".join(f"{counts[v]} {v}" for v in counts.index)
    lines = [
        "# Claims of the reference run",
        "",
        f"Rendered from `results/claims.csv` by `make results-page` ({stamp}). Do not edit: the",
        "numbers are the run's. docs/<study>.md explains each statistic and criterion.",
        "",
        f"{len(claims)} claims: {tally}.",
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


def write_markdown(claims_csv: Path, page: Path) -> None:
    """docs/results.md from a run's claims, stamped with the code, date and machine."""
    text = markdown_page(read_table(claims_csv, Claims), stamp())
    with atomic_path(page) as tmp:
        tmp.write_text(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("claims", type=Path, nargs="?", default=Path("results/claims.csv"))
    parser.add_argument("page", type=Path, nargs="?", default=Path("docs/results.md"))
    args = parser.parse_args()
    write_markdown(args.claims, args.page)


if __name__ == "__main__":
    main()
