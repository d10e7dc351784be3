"""Rule counting_geometry: C1's table, the constructions' outputs at Q on their best 2-plane."""

from transformer_stability.counting.items import geometry_item
from transformer_stability.counting.tables import Geometry
from transformer_stability.counting.theory_tables import geometry_table
from transformer_stability.io import write_table
from transformer_stability.logs import setup_logging
from transformer_stability.provenance import with_provenance

setup_logging(snakemake.log[0])
settings = snakemake.params.settings
item = geometry_item(settings["counting"], settings["seed"])
table = with_provenance(geometry_table(item), device="cpu", **item.provenance)
write_table(table, snakemake.output[0], Geometry, settings)
