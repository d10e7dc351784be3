"""Rule apjn_width: one chunk of Study A's width scan (a variant's image curves at one width and
initialization) -> its GMFE by depth region, one chunk table."""

from transformer_stability.apjn.measured_tables import width_table
from transformer_stability.apjn.tables import WidthAgreement
from transformer_stability.sweep_jobs import chunk_job

chunk_job(snakemake, width_table, WidthAgreement)
