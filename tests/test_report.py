"""`make report` describes the run that made the figures: where one figure was made it plans no
job and reports exactly that figure, as PDF and PNG, with captions and the configuration of the
run that made it."""

import json
import os
import re
import subprocess
import sys

import pandas as pd
import pytest
import yaml
from conftest import (
    ROOT,
    TINY_ARGS,
    announced_jobs,
    copy_of_run,
    deep_merge,
    deny_writes_in,
    load_yaml,
    run_snakemake,
)

from transformer_stability.claims import (
    NOT_RUN,
    VERDICTS,
    ClaimSpec,
    Finding,
    claims_tables,
    findings,
)
from transformer_stability.claims_page import (
    Notes,
    cpu_times,
    html_table,
    markdown_page,
    write_markdown,
)
from transformer_stability.registry import study_figures
from transformer_stability.report import missing, report_command
from transformer_stability.verdicts import FAILS, HOLDS, UNDECIDED, Estimate, Term, at_most

FIGURE = "apjn_theory_curves"


@pytest.mark.slow
def test_report_of_a_run_with_one_figure_holds_that_figure_for_that_run(tiny_run, tmp_path):
    # the tiny run as if it had made only FIGURE (its tables stay, as after a one-figure run)
    workdir = copy_of_run(tiny_run, tmp_path / "run")
    for path in (workdir / "results/figures").glob("*.p[dn][fg]"):
        if path.stem != FIGURE:
            path.unlink()
    recorded = yaml.safe_load((workdir / "results/config.yaml").read_text())
    tiny = load_yaml(ROOT / "tests/configs/tiny.yaml")
    assert recorded["apjn"]["model"]["width"] == tiny["apjn"]["model"]["width"]

    command = report_command(ROOT / "Snakefile", workdir)
    report_args = ("--report", str((workdir / "results/report.html").resolve()))
    planned = subprocess.run(
        ["-n" if c == "--report" else c for c in command if c != report_args[1]],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert planned.returncode == 0, planned.stderr[-3000:]
    assert "Nothing to be done" in planned.stdout + planned.stderr

    report = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert report.returncode == 0, report.stderr[-3000:]
    html = (workdir / "results/report.html").read_text(errors="replace")
    names = set(re.findall(r'"name": "([\w.]+)", "filename"', html))
    assert names == {f"{FIGURE}.pdf", f"{FIGURE}.png"}
    width, depth = tiny["apjn"]["model"]["width"], tiny["apjn"]["model"]["depth"]
    assert f"ViT of depth\\n{depth} " in html or f"ViT of depth {depth} " in html
    assert json.dumps(width) in html and "384" not in re.findall(r"width\D{0,12}(\d+)", html)


def test_report_needs_a_recorded_run(tmp_path):
    with pytest.raises(SystemExit, match="no .*results/config.yaml"):
        report_command(ROOT / "Snakefile", tmp_path)
    assert sys.executable  # the command is built with this interpreter


def test_report_into_a_read_only_results_tree_says_so_before_writing(tmp_path, monkeypatch):
    (tmp_path / "results" / "figures").mkdir(parents=True)
    (tmp_path / "results" / "config.yaml").write_text("studies: [apjn]\n")
    (tmp_path / "results" / "figures" / "apjn_permsym.png").write_bytes(b"png")
    deny_writes_in(monkeypatch, tmp_path / "results")
    with pytest.raises(SystemExit, match=r"results is read-only .*chmod -R u\+w"):
        report_command(ROOT / "Snakefile", tmp_path)
    assert not (tmp_path / "results" / "report").exists()


def _section(text: str, heading: str) -> list[str]:
    """The table rows under `heading` of a Markdown page."""
    body = text.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    return [line for line in body.splitlines() if re.match(r"\| [ANC]\.\d ", line)]


@pytest.mark.slow
def test_the_results_page_renders_every_claim_of_a_run(tiny_run, tmp_path):
    results = tiny_run.workdir / "results"
    page = tmp_path / "results.md"
    write_markdown(results, page)
    text = page.read_text()
    claims, terms = pd.read_csv(results / "claims.csv"), pd.read_csv(results / "claim_terms.csv")
    rows = _section(text, "Claims")
    verdicts = claims.set_index("claim")["verdict"]
    listed = [row.split(" | ")[0][2:] for row in rows]
    assert sorted(listed) == sorted(claims["claim"])
    assert [row.rstrip(" |").split(" | ")[-3] for row in rows] == list(verdicts[listed])
    # the undecided claims first, each with what would decide it
    order = [verdicts[c] == UNDECIDED for c in listed]
    assert order == sorted(order, reverse=True)
    for claim in claims[claims["verdict"] == UNDECIDED].itertuples():
        assert f"- **{claim.claim}**: {claim.need}" in text
    assert len(_section(text, "Every term with its interval")) == len(terms)
    assert re.search(r"\(commit \w+, \d{4}-\d\d-\d\d, .+ \(\d+ cores", text)
    counts = claims["verdict"].value_counts()
    tally = ", ".join(f"{counts.get(v, 0)} {v}" for v in VERDICTS)
    assert f"{len(claims)} claims: {tally}." in text
    # every heavy rule's benchmark records, summed
    times = cpu_times(results / "benchmarks")
    assert set(times["folder"]) >= {"apjn/", "apjn_curves/", "numerics_gpt2/", "counting/"}
    gpt2 = times.set_index("folder").loc["numerics_gpt2/"]  # a sweep cut in two (conftest)
    assert gpt2["jobs"] == 2 and f"| `numerics_gpt2/` | 2 | {gpt2['cpu_s']:.0f} |" in text


def _spec(claim: str, terms: tuple[Term, ...] | None) -> ClaimSpec:
    finding = None if terms is None else Finding("s", "v", terms)
    return ClaimSpec(claim, "a | b", "c\nd", "X1", (), lambda tables, section: finding)


def _claims(*specs: ClaimSpec) -> tuple[pd.DataFrame, pd.DataFrame]:
    return claims_tables(findings(specs, {}, {}))


def narrow() -> Term:
    return Term("t", Estimate(1.0, 0.99, 1.01, "b", 4, "seeds"), at_most(1.05))


def straddling() -> Term:
    return Term("u", Estimate(1.04, 1.02, 1.06, "b", 4, "seeds"), at_most(1.05))


def failing() -> Term:
    return Term("w", Estimate.exact(2.0), at_most(1.05))


def test_the_claims_tables_carry_the_decisive_terms_and_the_need():
    claims, terms = _claims(
        _spec("X.1", (narrow(),)),
        _spec("X.2", (narrow(), straddling())),
        _spec("X.3", (straddling(), failing())),
    )
    rows = claims.set_index("claim")
    assert list(rows["verdict"]) == [HOLDS, UNDECIDED, FAILS]
    assert rows.loc["X.1", "intervals"] == "t 1 [0.99, 1.01] <= 1.05: holds"
    assert rows.loc["X.2", "intervals"] == "u 1.04 [1.02, 1.06] <= 1.05: undecided"
    assert rows.loc["X.2", "need"] == "u: about 16 seeds at the observed spread (now 4)"
    assert rows.loc["X.3", "intervals"].endswith("w 2 <= 1.05: does not hold")
    assert pd.isna(rows.loc["X.1", "need"])
    assert list(terms["claim"]) == ["X.1", "X.2", "X.2", "X.3", "X.3"]
    assert list(terms["verdict"]) == [HOLDS, HOLDS, UNDECIDED, UNDECIDED, FAILS]
    assert list(terms.iloc[2][["point", "lo", "hi"]]) == [1.04, 1.02, 1.06]


def test_the_results_page_keeps_a_table_cell_per_column_and_lists_undecided_first():
    claims, terms = _claims(_spec("X.1", None), _spec("X.2", (straddling(),)))
    text = markdown_page(claims, terms, "stamp")
    rows = _section(text.replace("| X.", "| N."), "Claims")
    assert rows[0].startswith("| N.2 ") and "| undecided | u: about" in rows[0]
    assert rows[1] == f"| N.1 | a \\| b |  |  | c d |  | {NOT_RUN} |  | X1 |"
    assert "- **X.2**: u: about 16 seeds" in text
    assert "2 claims: 0 holds, 0 does not hold, 1 undecided, 1 not run at this preset." in text
    html = html_table(claims, terms)
    assert html.index("X.2") < html.index("X.1")
    assert '<tr class="verdict-undecided"><td class="claim">X.2</td>' in html
    assert "<summary>all 1 terms with their intervals</summary>" in html


def test_the_report_names_the_runs_missing_figures_and_marks_the_claims_citing_them():
    """A figure whose job failed (Snakemake removed its files, its log stays) is named above the
    claims with its log, and every claim citing it says so, instead of leaving it out silently."""
    made = [f"results/figures/{f.name}.{x}" for f in study_figures("counting") for x in "pdf png"]
    bmin = next(f for f in study_figures("counting") if f.code == "C2")
    made = [path for path in made if bmin.name not in path]
    assert missing({"studies": ["counting"]}, made) == {"C2": bmin.log}
    assert missing({"studies": ["apjn"]}, made)["A1"] == "results/logs/figures/apjn_permsym.log"
    claims, terms = _claims(_spec("X.1", (narrow(),)), _spec("X.2", (narrow(),)))
    claims.loc[1, "figure"] = "C2, C4"
    html = html_table(claims, terms, Notes(missing={"C2": bmin.log}))
    assert "<strong>Missing figures:</strong> C2 (<code>results/logs/figures/" in html
    assert '<td class="figure">C2 (missing), C4</td>' in html
    assert '<td class="figure">X1</td>' in html
    assert "Missing" not in html_table(claims, terms)
    linked = html_table(claims, terms, Notes(missing={"C2": bmin.log}), {"C4": "c4.png"})
    show = "results[&#x27;c4.png&#x27;].data_uri"  # the report's own view of that PNG
    assert '<td class="figure">C2 (missing), <a href="#" onclick="app.setView(' in linked
    assert show in linked and ">C4</a></td>" in linked


def _caption_widths(html: str) -> dict[str, set[str]]:
    """The model depth and width two apjn captions state, as the report holds them."""
    patterns = {
        "apjn_theory_curves": r"ViT of depth(?:\\n| )(\d+) ",
        "apjn_permsym": r"timm ViTs \(width (\d+),",
    }
    return {name: set(re.findall(pattern, html)) for name, pattern in patterns.items()}


@pytest.mark.slow
def test_a_mixed_results_tree_reports_each_figure_with_its_own_configuration(tiny_run, tmp_path):
    """One figure remade at another depth after the tiny run, then a paper configuration
    recorded (results copied off a cluster): `make report` needs neither CIFAR nor the hub,
    and captions every figure from the settings of its own tables, not from the record."""
    workdir = copy_of_run(tiny_run, tmp_path / "run")
    wider = tmp_path / "wider.yaml"
    wider.write_text(yaml.safe_dump({"apjn": {"model": {"depth": 9}}}))
    target = f"results/figures/{FIGURE}.pdf"
    remade = run_snakemake(workdir, "--cores", "2", *TINY_ARGS, str(wider), "--", target)
    assert remade.returncode == 0, remade.stderr[-3000:]
    assert {job for job, _ in announced_jobs(remade.stderr)} == {"apjn_theory_curves", "figure"}
    paper = deep_merge(load_yaml(ROOT / "config.yaml"), load_yaml(ROOT / "config/paper.yaml"))
    (workdir / "results/config.yaml").write_text(yaml.safe_dump(paper))

    command = report_command(ROOT / "Snakefile", workdir)
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    report = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=env)
    assert report.returncode == 0, report.stderr[-3000:]
    html = (workdir / "results/report.html").read_text(errors="replace")
    # the tiny preset measures its equiangular curves at 4 heads of 16
    assert _caption_widths(html) == {"apjn_theory_curves": {"9"}, "apjn_permsym": {"64"}}
    assert "caption=rendered from the settings of its tables" in html  # no caption text there
    # and the landing page says that the figures are not of the recorded (paper) configuration
    claims_page = (workdir / "results/report/claims.html").read_text()
    note = claims_page.split("<strong>Figures made under another configuration:</strong>")[1]
    note = note.split("</p>", 1)[0].strip()
    assert "A1-theory (apjn.model.depth: 9 here, 64 in results/config.yaml)" in note
    codes = {f.code for s in paper["studies"] for f in study_figures(s)}
    assert set(re.findall(r"(?:^|; )([ANC]\d+(?:-theory)?) \(", note)) == codes


def test_one_digit_figure_numbers_are_listed_after_a_figure_space():
    from transformer_stability.plotting import FIGURE_SPACE, listed_code

    assert listed_code("A1") == f"A{FIGURE_SPACE}1"
    assert listed_code("A1-theory") == f"A{FIGURE_SPACE}1-theory"
    assert listed_code("N11") == "N11"
    assert listed_code("C7") == f"C{FIGURE_SPACE}7"
