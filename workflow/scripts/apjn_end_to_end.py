"""Rule apjn_end_to_end: one chunk of end-to-end J^{L,0} measurements
(one model each) -> one chunk table, rows tagged with their item."""

from transformer_stability.apjn.measured_tables import end_to_end_table
from transformer_stability.apjn.tables import EndToEnd
from transformer_stability.sweep_jobs import chunk_job

chunk_job(snakemake, end_to_end_table, EndToEnd)
