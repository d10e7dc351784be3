# Study C: the parameter cost of counting with one attention layer (shared/specs/counting.md).
# Heavy rules (LPs, constructions, batched training) write tidy tables; plot rules only read them.


rule counting_theory:
    output:
        theory="results/counting/bmin_theory.csv",
        geometry="results/counting/geometry.csv",
    log:
        "results/logs/counting/theory.log",
    benchmark:
        "results/benchmarks/counting/theory.tsv"
    conda:
        "../../envs/pipeline.yaml"
    params:
        counting=config["counting"],
        seed=config["seed"],
    script:
        "../scripts/counting_theory.py"


rule counting_training:
    output:
        "results/counting/training_{readout}.csv",
    log:
        "results/logs/counting/training_{readout}.log",
    benchmark:
        "results/benchmarks/counting/training_{readout}.tsv"
    wildcard_constraints:
        readout="regression|classification",
    conda:
        "../../envs/pipeline.yaml"
    # No gpu token: both read-outs' sweeps are small enough to share one GPU, and on a CPU the
    # two single-threaded jobs run side by side.
    params:
        counting=config["counting"],
        seed=config["seed"],
        device=config["device"],
    script:
        "../scripts/counting_training.py"


rule counting_rates:
    input:
        theory="results/counting/bmin_theory.csv",
        training=expand(
            "results/counting/training_{readout}.csv",
            readout=["regression", "classification"],
        ),
    output:
        training="results/counting/training.csv",
        empirical="results/counting/empirical_bmin.csv",
        rates="results/counting/rates.csv",
    log:
        "results/logs/counting/rates.log",
    localrule: True
    conda:
        "../../envs/pipeline.yaml"
    params:
        fit_points=config["counting"]["theory"]["fit_points"],
        seed=config["seed"],
    script:
        "../scripts/counting_rates.py"


rule counting_exponents:
    input:
        rates="results/counting/rates.csv",
        theory="results/counting/bmin_theory.csv",
    output:
        "results/counting/exponents.csv",
    log:
        "results/logs/counting/exponents.log",
    localrule: True
    conda:
        "../../envs/pipeline.yaml"
    script:
        "../scripts/counting_exponents.py"
