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
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

import pandas as pd

from transformer_stability.claims import NOT_RUN, VERDICTS, Claims, ClaimTerms
from transformer_stability.io import atomic_path, read_table
from transformer_stability.verdicts import FAILS, HOLDS, UNDECIDED

COLUMNS = tuple(Claims.to_schema().columns)  # the claims' own, in the model's order
TERM_COLUMNS = ("term", "point", "lo", "hi", "criterion", "verdict", "basis")
_VERDICT_CLASS = {HOLDS: "holds", FAILS: "fails", UNDECIDED: "undecided", NOT_RUN: "not-run"}


def _cell(value: object) -> str:
    if isinstance(value, float):
        return "" if pd.isna(value) else f"{value:.4g}"
    return "" if pd.isna(value) else str(value)


def tally(claims: pd.DataFrame) -> str:
    """'20 claims: 15 holds, 1 does not hold, 4 undecided, 0 not run at this preset'."""
    counts = claims["verdict"].value_counts()
    parts = ", ".join(f"{counts.get(v, 0)} {v}" for v in VERDICTS)
    return f"{len(claims)} claims: {parts}"


def undecided_first(claims: pd.DataFrame) -> pd.DataFrame:
    """The claims with the undecided ones first, each group in the studies' order."""
    order = claims["verdict"].map({UNDECIDED: 0}).fillna(1)
    return claims.assign(_order=order).sort_values("_order", kind="stable").drop(columns="_order")


def _html_terms(terms: pd.DataFrame) -> str:
    """A claim's terms as a collapsed table under its row."""
    head = "".join(f"<th>{name}</th>" for name in TERM_COLUMNS)
    rows = "".join(
        f'<tr class="verdict-{_VERDICT_CLASS[row["verdict"]]}">'
        + "".join(f"<td>{html.escape(_cell(row[name]))}</td>" for name in TERM_COLUMNS)
        + "</tr>"
        for _, row in terms.iterrows()
    )
    return (
        f"<details><summary>all {len(terms)} terms with their intervals</summary>"
        f'<table class="terms"><tr>{head}</tr>{rows}</table></details>'
    )


# A figure code in the claims table opens its figure in the report, beside its caption: what the
# report's own view buttons do (its `app` and its `results` by path are the page's globals).
_SHOW_FIGURE = (
    "app.setView({{content: 'img', contentPath: results['{path}'].data_uri, "
    "resultPath: '{path}', navbarMode: 'resultinfo'}}); return false;"
)


def figure_links(figures: str, files: Mapping[str, str]) -> str:
    """A claim's figure cell as HTML: each code whose figure is in `files` (code -> the PNG's
    path in the report) a link that opens it."""
    codes = [code.strip() for code in figures.split(",")] if figures else []
    return ", ".join(
        f'<a href="#" onclick="{html.escape(_SHOW_FIGURE.format(path=files[code]))}">'
        f"{html.escape(code)}</a>"
        if code in files
        else html.escape(code)
        for code in codes
    )


def mark_missing(figures: str, missing: Mapping[str, str]) -> str:
    """A claim's figure codes ("A5, A7"), each code whose figure is missing marked so."""
    if not isinstance(figures, str):  # a claim that cites no figure
        return figures
    codes = [code.strip() for code in figures.split(",")] if figures else []
    return ", ".join(f"{code} (missing)" if code in missing else code for code in codes)


@dataclass(frozen=True)
class Notes:
    """What the landing page warns of above the claims, by figure code: the run's figures that
    are not in the tree (with the log of their job), and those made under another
    configuration than the recorded one (with the first key that differs)."""

    missing: Mapping[str, str] = field(default_factory=dict)
    other_configuration: Mapping[str, str] = field(default_factory=dict)

    def html(self) -> str:
        missing = _note(
            self.missing,
            "Missing figures",
            "Their job failed or has not run (its log is named); the claims citing them are "
            "marked below.",
            code=True,
        )
        other = _note(
            self.other_configuration,
            "Figures made under another configuration",
            "Their captions give their own settings; this page's configuration is not theirs.",
        )
        return missing + other


def _note(found: Mapping[str, str], title: str, then: str, code: bool = False) -> str:
    if not found:
        return ""
    shown = {
        k: f"<code>{html.escape(v)}</code>" if code else html.escape(v) for k, v in found.items()
    }
    listed = "; ".join(f"{html.escape(k)} ({v})" for k, v in shown.items())
    return f'<p class="missing"><strong>{title}:</strong> {listed}. {then}</p>\n'


def _html_cell(name: str, value: object, files: Mapping[str, str]) -> str:
    if name == "figure" and isinstance(value, str):
        return figure_links(value, files)
    return html.escape(_cell(value))


def html_table(
    claims: pd.DataFrame,
    terms: pd.DataFrame,
    notes: Notes | None = None,
    files: Mapping[str, str] | None = None,
) -> str:
    """The claims as an HTML table (undecided first, verdicts coloured), each with its terms
    collapsed below it, under the count per verdict and the `notes` (the report's landing
    page); figure codes found in `files` (code -> PNG path) link to their figures."""
    notes, files = notes or Notes(), files or {}
    claims = claims.assign(figure=[mark_missing(f, notes.missing) for f in claims["figure"]])
    head = "".join(f"<th>{name}</th>" for name in COLUMNS)
    rows = []
    for _, row in undecided_first(claims).iterrows():
        verdict = _VERDICT_CLASS[row["verdict"]]
        cells = "".join(
            f'<td class="{name}">{_html_cell(name, row[name], files)}</td>' for name in COLUMNS
        )
        rows.append(f'<tr class="verdict-{verdict}">{cells}</tr>')
        own = terms[terms["claim"] == row["claim"]]
        if not own.empty:
            rows.append(f'<tr><td colspan="{len(COLUMNS)}">{_html_terms(own)}</td></tr>')
    return (
        notes.html() + f"<p>{html.escape(tally(claims))}.</p>\n"
        f'<table class="claims"><tr>{head}</tr>\n' + "\n".join(rows) + "\n</table>\n"
    )


def _markdown_cell(value: object) -> str:
    return _cell(value).replace("|", "\\|").replace("\n", " ")


def _markdown_rows(frame: pd.DataFrame, columns: tuple[str, ...]) -> list[str]:
    lines = ["| " + " | ".join(columns) + " |", "|" + " --- |" * len(columns)]
    for _, row in frame.iterrows():
        lines.append("| " + " | ".join(_markdown_cell(row[n]) for n in columns) + " |")
    return lines


def markdown_page(claims: pd.DataFrame, terms: pd.DataFrame, stamp: str) -> str:
    """docs/results.md: the claims of the reference run under the stamp that names it, the
    undecided ones first with what would decide them, then every term with its interval."""
    undecided = claims[claims["verdict"] == UNDECIDED]
    lines = [
        "# Claims of the reference run",
        "",
        f"Rendered from `results/` by `make results-page` ({stamp}). Do not edit: the numbers",
        "are the run's. docs/<study>.md explains each statistic and criterion; docs/verdicts.md",
        "how a verdict is decided by intervals.",
        "",
        f"{tally(claims)}.",
        "",
    ]
    if not undecided.empty:
        lines += ["## Undecided claims and what would decide them", ""]
        lines += [f"- **{row.claim}**: {row.need}" for row in undecided.itertuples()]
        lines.append("")
    lines += ["## Claims", "", *_markdown_rows(undecided_first(claims), COLUMNS), ""]
    lines += ["## Every term with its interval", ""]
    lines += _markdown_rows(terms, ("claim", *TERM_COLUMNS))
    return "\n".join(lines) + "\n"


def stamp(root: Path = Path(".")) -> str:
    """'commit abc1234, 2026-12-01, <machine>': which code made the page, when and where."""
    commit = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    machine = f"{platform.node()} ({os.cpu_count()} cores, {platform.machine()})"
    return f"commit {commit or 'unknown'}, {date.today().isoformat()}, {machine}"


def write_html(
    claims_csv: Path,
    terms_csv: Path,
    page: Path,
    notes: Notes | None = None,
    files: Mapping[str, str] | None = None,
) -> None:
    """The landing page's claims fragment: the table under the `notes` (figure codes linked to
    `files`), or where the claims are not in this results tree, how to compute them."""
    if claims_csv.exists() and terms_csv.exists():
        claims, terms = read_table(claims_csv, Claims), read_table(terms_csv, ClaimTerms)
        text = html_table(claims, terms, notes, files)
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
        "core where jobs ran side by side. CPU seconds are Snakemake's samples of each job's",
        "process, taken every 30 s at the longest, so they miss up to a job's last interval: where",
        "a run's jobs never outnumber its cores, the wall seconds measure its CPU better.",
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
    claims = read_table(results / "claims.csv", Claims)
    terms = read_table(results / "claim_terms.csv", ClaimTerms)
    claims = markdown_page(claims, terms, stamp())
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
