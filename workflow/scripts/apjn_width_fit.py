"""Rule apjn_width_fit: the width scan's GMFE excess per width and its fitted width slope, with
a bootstrap interval. The scan's models at the configured width are the curve sweep's image
models: their rows come from agreement.csv."""

from transformer_stability.apjn.items import scan_items, width_items
from transformer_stability.apjn.tables import Agreement, WidthAgreement, WidthExcess, WidthSlopes
from transformer_stability.apjn.width_fit import scan_table, width_excess, width_slopes
from transformer_stability.table_jobs import table_job


def compute(tables, settings):
    apjn, seed = settings["apjn"], settings["seed"]
    swept = width_items(apjn, seed)
    table = scan_table(tables["table"], tables["agreement"], scan_items(apjn, seed), swept)
    return {"excess": width_excess(table), "slopes": width_slopes(table, settings["seed"])}


OUTPUTS = {"excess": WidthExcess, "slopes": WidthSlopes}
INPUTS = {"table": WidthAgreement, "agreement": Agreement}
table_job(snakemake, compute, OUTPUTS, INPUTS, carry="table")
