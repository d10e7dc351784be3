"""Rule apjn_agreement: GMFE of measured vs theory curves per sample and depth region, and its
means with bootstrap intervals."""

from transformer_stability.apjn.agreement import agreement
from transformer_stability.apjn.agreement_intervals import agreement_means
from transformer_stability.apjn.tables import Agreement, AgreementMeans, MeasuredCurves
from transformer_stability.table_jobs import table_job


def compute(tables, settings):
    compare_from = settings["apjn"]["images"]["compare_from_block"]
    table = agreement(tables["table"], compare_from)
    means = agreement_means(table, tables["table"], compare_from, settings["seed"])
    return {"table": table, "means": means}


OUTPUTS = {"table": Agreement, "means": AgreementMeans}
table_job(snakemake, compute, OUTPUTS, {"table": MeasuredCurves}, carry="table")
