"""Rule counting_theory: one chunk of Study C's theory widths (lower bounds and grid-verified
constructions of B_min(L), and the bare pre-norm wall, at one d) -> two chunk tables, rows
tagged with their item."""

from transformer_stability.counting.tables import BminTheory, ConstructionPrecision, Walls
from transformer_stability.counting.theory_tables import theory_tables
from transformer_stability.sweep_jobs import chunk_job

chunk_job(
    snakemake,
    lambda item, _device: theory_tables(item),
    {"theory": BminTheory, "walls": Walls, "precision": ConstructionPrecision},
)
