# Study N: numerical stability of mixed-precision inference (docs/numerics.md).
# Every (model, α, storage group) of the GPT-2 runs and every model's weight magnitudes is a
# sweep item (transformer_stability/numerics/items.py, chunk rules in sweeps.smk); the synthetic
# bound experiments are one job each.
from transformer_stability.numerics.items import BOUND_EXPERIMENTS


rule numerics_bounds:
    input:
        sources=code("numerics_bounds.py"),
    output:
        "results/numerics/{experiment}.csv",
    log:
        "results/logs/numerics/{experiment}.log",
    benchmark:
        "results/benchmarks/numerics/{experiment}.tsv"
    wildcard_constraints:
        experiment=one_of(BOUND_EXPERIMENTS),
    conda:
        "../../envs/pipeline.yaml"
    params:
        settings=table_settings("numerics_bounds"),
    script:
        "../scripts/numerics_bounds.py"
