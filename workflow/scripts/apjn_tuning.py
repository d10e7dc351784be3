"""Rule apjn_tuning: the trainability runs -> per configuration the best loss over rates and
its window, and the pairs of configurations with equal theory J^{L,0}."""

from transformer_stability.apjn.tables import MatchedPairs, Trainability, TuningWindows
from transformer_stability.apjn.tuning import matched_pairs, rate_windows
from transformer_stability.table_jobs import table_job


def compute(tables, settings):
    windows = rate_windows(tables["table"])
    return {"windows": windows, "pairs": matched_pairs(windows)}


OUTPUTS = {"windows": TuningWindows, "pairs": MatchedPairs}
table_job(snakemake, compute, OUTPUTS, {"table": Trainability}, carry="table")
