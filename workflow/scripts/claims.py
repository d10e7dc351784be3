"""Rule claims: every claim of the three abstracts tested on the run's tables
(transformer_stability/claims.py; each study states its claims in `<study>/claims`)."""

from pathlib import Path

from transformer_stability.claims import Claims, ClaimTerms
from transformer_stability.claims_page import write_html
from transformer_stability.io import read_table, write_table
from transformer_stability.logs import setup_logging
from transformer_stability.provenance import with_provenance
from transformer_stability.registry import evaluate_claims, figure_files, table_model
from transformer_stability.tables import below_results

setup_logging(snakemake.log[0])
# each table's row count is checked against the settings it records (io.read_table)
tables = {below_results(p): read_table(p, table_model(p)) for p in snakemake.input.tables}
claims, terms = evaluate_claims(tables, snakemake.params.sections)
for frame, path, model in (
    (claims, snakemake.output.table, Claims),
    (terms, snakemake.output.terms, ClaimTerms),
):
    provenance = with_provenance(frame, seed=snakemake.params.seed, device="cpu", dtype="float64")
    write_table(provenance, path, model)
outputs = snakemake.output
write_html(Path(outputs.table), Path(outputs.terms), Path(outputs.page), files=figure_files())
