# Study N: numerical stability of mixed-precision inference (docs/numerics.md).
# Every (model, α, storage group) of the GPT-2 runs and every model's weight magnitudes is a
# sweep item (transformer_stability/numerics/items.py, chunk rules in sweeps.smk); the synthetic
# bound experiments are one job each.
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
        experiment="norms|softmax|lipschitz",
    conda:
        "../../envs/pipeline.yaml"
    params:
        section=lambda wildcards: config["numerics"][wildcards.experiment],
        seed=config["seed"],
    script:
        "../scripts/numerics_bounds.py"
