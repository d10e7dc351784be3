"""Rule apjn_agreement: GMFE of measured vs theory curves per sample and depth region, and its
means with bootstrap intervals."""

from transformer_stability.apjn.agreement import agreement, agreement_means
from transformer_stability.apjn.tables import Agreement, AgreementMeans, MeasuredCurves
from transformer_stability.derived import derived_job


def derive(curves, settings):
    compare_from = settings["apjn"]["images"]["compare_from_block"]
    table = agreement(curves, compare_from)
    means = agreement_means(table, curves, compare_from, settings["seed"])
    return {"table": table, "means": means}


derived_job(snakemake, MeasuredCurves, derive, {"table": Agreement, "means": AgreementMeans})
