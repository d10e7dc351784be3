"""Rule apjn_tuning: the trainability runs -> per configuration the best loss over rates (with
its interval over seeds) and its window, the pairs of configurations with equal theory J^{L,0},
and per norm and depth the statistics of careful tuning with their contrasts with pre-LN."""

from transformer_stability.apjn.tables import (
    MatchedPairs,
    Trainability,
    TuningStatistics,
    TuningWindows,
)
from transformer_stability.apjn.tuning import matched_pairs, rate_windows
from transformer_stability.apjn.tuning_statistics import statistics_table, with_best_intervals
from transformer_stability.table_jobs import table_job


def compute(tables, settings):
    train = tables["table"]
    windows = with_best_intervals(rate_windows(train), train)
    return {
        "windows": windows,
        "pairs": matched_pairs(windows),
        "statistics": statistics_table(train),
    }


OUTPUTS = {"windows": TuningWindows, "pairs": MatchedPairs, "statistics": TuningStatistics}
table_job(snakemake, compute, OUTPUTS, {"table": Trainability}, carry="table")
