"""Rule apjn_curves: one chunk of Study A's curve measurements (a variant on an input kind)
-> one chunk table, rows tagged with their item."""

from transformer_stability.apjn.measured_tables import curve_table
from transformer_stability.apjn.tables import MeasuredCurves
from transformer_stability.sweep_jobs import chunk_job

chunk_job(snakemake, curve_table, MeasuredCurves)
