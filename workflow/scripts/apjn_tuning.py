"""Rule apjn_tuning: the trainability runs -> per configuration the best loss over rates and
its window, and the pairs of configurations with equal theory J^{L,0}."""

from transformer_stability.apjn.tables import MatchedPairs, Trainability, TuningWindows
from transformer_stability.apjn.tuning import matched_pairs, rate_windows
from transformer_stability.io import read_table, write_table
from transformer_stability.logs import setup_logging
from transformer_stability.settings import derived_settings
from transformer_stability.tables import Provenance, columns_of

setup_logging(snakemake.log[0])
settings = derived_settings(snakemake.params.settings, [snakemake.input.table])
train = read_table(snakemake.input.table, Trainability)
provenance = train[columns_of(Provenance)].iloc[[0]].to_dict("records")[0]
windows = rate_windows(train)
write_table(windows.assign(**provenance), snakemake.output.windows, TuningWindows, settings)
pairs = matched_pairs(windows).assign(**provenance)
write_table(pairs, snakemake.output.pairs, MatchedPairs, settings)
