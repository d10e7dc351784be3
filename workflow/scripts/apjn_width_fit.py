"""Rule apjn_width_fit: the width scan's GMFE excess per width and its fitted width slope, with
a bootstrap interval."""

from transformer_stability.apjn.tables import WidthAgreement, WidthExcess, WidthSlopes
from transformer_stability.apjn.width_fit import width_excess, width_slopes
from transformer_stability.table_jobs import table_job


def compute(tables, settings):
    table = tables["table"]
    return {"excess": width_excess(table), "slopes": width_slopes(table, settings["seed"])}


OUTPUTS = {"excess": WidthExcess, "slopes": WidthSlopes}
table_job(snakemake, compute, OUTPUTS, {"table": WidthAgreement}, carry="table")
