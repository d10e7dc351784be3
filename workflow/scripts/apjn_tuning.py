"""Rule apjn_tuning: the trainability runs -> per configuration the best loss over rates and
its window, and the pairs of configurations with equal theory J^{L,0}."""

from transformer_stability.apjn.tables import MatchedPairs, Trainability, TuningWindows
from transformer_stability.apjn.tuning import matched_pairs, rate_windows
from transformer_stability.derived import derived_job


def derive(train, settings):
    windows = rate_windows(train)
    return {"windows": windows, "pairs": matched_pairs(windows)}


derived_job(snakemake, Trainability, derive, {"windows": TuningWindows, "pairs": MatchedPairs})
