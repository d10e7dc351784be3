"""Rule counting_rates: success fractions of the training's bound grid, the empirical B_min
read from them, and fitted exponents of every B_min(L) curve (theory and training) and of the
classification margins."""

from transformer_stability.counting.derived_tables import empirical_bmin, rates_table, success_table
from transformer_stability.counting.tables import (
    BminTheory,
    EmpiricalBmin,
    Precision,
    Rates,
    Success,
    Training,
)
from transformer_stability.io import read_table, write_table
from transformer_stability.logs import setup_logging
from transformer_stability.provenance import with_provenance
from transformer_stability.settings import derived_settings

setup_logging(snakemake.log[0])
inputs = snakemake.input
settings = derived_settings(
    snakemake.params.settings, [inputs.theory, inputs.training, inputs.precision]
)
training = read_table(inputs.training, Training)
success = success_table(training)
empirical = empirical_bmin(training, success)
theory = read_table(inputs.theory, BminTheory)
precision = read_table(inputs.precision, Precision)
fit_points = settings["counting"]["theory"]["fit_points"]
rates = rates_table(theory, empirical, precision, fit_points)
outputs = (
    (success, snakemake.output.success, Success),
    (empirical, snakemake.output.empirical, EmpiricalBmin),
    (rates, snakemake.output.rates, Rates),
)
for table, path, model in outputs:
    write_table(
        with_provenance(table, seed=settings["seed"], device="cpu", dtype="float64"),
        path,
        model,
        settings,
    )
