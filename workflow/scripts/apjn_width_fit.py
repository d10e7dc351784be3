"""Rule apjn_width_fit: the width scan's GMFE excess per width and its fitted width slope, with
a bootstrap interval."""

from transformer_stability.apjn.tables import WidthAgreement, WidthExcess, WidthSlopes
from transformer_stability.apjn.width_fit import width_excess, width_slopes
from transformer_stability.derived import derived_job


def derive(table, settings):
    return {"excess": width_excess(table), "slopes": width_slopes(table, settings["seed"])}


derived_job(snakemake, WidthAgreement, derive, {"excess": WidthExcess, "slopes": WidthSlopes})
