"""Rule counting_residual: C7's table, the best attainable max |y - c| against B at one L."""

from transformer_stability.counting.items import residual_item
from transformer_stability.counting.tables import Residual
from transformer_stability.counting.theory_tables import residual_table
from transformer_stability.io import write_table
from transformer_stability.logs import setup_logging
from transformer_stability.provenance import with_provenance

setup_logging(snakemake.log[0])
settings = snakemake.params.settings
item = residual_item(settings["counting"], settings["seed"])
table = with_provenance(residual_table(item), device="cpu", **item.provenance)
write_table(table, snakemake.output[0], Residual, settings)
