"""Rule counting_geometry: C1's table, the constructions' outputs at Q on their best 2-plane."""

from transformer_stability.counting.items import geometry_item
from transformer_stability.counting.tables import Geometry
from transformer_stability.counting.theory_tables import geometry_table
from transformer_stability.table_jobs import table_job


def compute(tables, settings):
    return geometry_table(geometry_item(settings["counting"], settings["seed"]))


table_job(snakemake, compute, Geometry)
