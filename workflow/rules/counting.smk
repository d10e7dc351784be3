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


rule counting_geometry_figure:
    input:
        "results/counting/geometry.csv",
    output:
        pdf=report(
            "results/figures/counting_geometry.pdf",
            caption="../report/counting_geometry.rst",
            category="Study C: counting",
            labels={
                "figure": "C1",
                "quantity": "representation geometry",
                "placement": "none, pre, post (bare and learned)",
                "readout": "regression, classification",
            },
        ),
        png="results/figures/counting_geometry.png",
    log:
        "results/logs/counting/geometry_figure.log",
    localrule: True
    conda:
        "../../envs/pipeline.yaml"
    params:
        study="counting",
        plot="plot_geometry",
    script:
        "../scripts/table_figure.py"


rule counting_bmin_figure:
    input:
        theory="results/counting/bmin_theory.csv",
        rates="results/counting/rates.csv",
    output:
        pdf=report(
            "results/figures/counting_bmin.pdf",
            caption="../report/counting_bmin.rst",
            category="Study C: counting",
            labels={
                "figure": "C2",
                "quantity": "B_min vs L",
                "placement": "none, pre, post (bare and learned)",
                "readout": "regression, classification",
            },
        ),
        png="results/figures/counting_bmin.png",
    log:
        "results/logs/counting/bmin_figure.log",
    localrule: True
    conda:
        "../../envs/pipeline.yaml"
    script:
        "../scripts/counting_bmin_figure.py"


rule counting_training_figure:
    input:
        "results/counting/training.csv",
    output:
        pdf=report(
            "results/figures/counting_training.pdf",
            caption="../report/counting_training.rst",
            category="Study C: counting",
            labels={
                "figure": "C3",
                "quantity": "unconstrained training",
                "placement": "post (learned)",
                "readout": "regression, classification",
            },
        ),
        png="results/figures/counting_training.png",
    log:
        "results/logs/counting/training_figure.log",
    localrule: True
    conda:
        "../../envs/pipeline.yaml"
    params:
        study="counting",
        plot="plot_training",
    script:
        "../scripts/table_figure.py"


rule counting_constrained_figure:
    input:
        training="results/counting/training.csv",
        empirical="results/counting/empirical_bmin.csv",
        theory="results/counting/bmin_theory.csv",
        rates="results/counting/rates.csv",
    output:
        pdf=report(
            "results/figures/counting_constrained.pdf",
            caption="../report/counting_constrained.rst",
            category="Study C: counting",
            labels={
                "figure": "C4",
                "quantity": "norm-constrained training",
                "placement": "post (learned)",
                "readout": "regression, classification",
            },
        ),
        png="results/figures/counting_constrained.png",
    log:
        "results/logs/counting/constrained_figure.log",
    localrule: True
    conda:
        "../../envs/pipeline.yaml"
    script:
        "../scripts/counting_constrained_figure.py"


rule counting_exponents_figure:
    input:
        rates="results/counting/rates.csv",
        theory="results/counting/bmin_theory.csv",
    output:
        pdf=report(
            "results/figures/counting_exponents.pdf",
            caption="../report/counting_exponents.rst",
            category="Study C: counting",
            labels={
                "figure": "C5",
                "quantity": "table of exponents",
                "placement": "none, pre, post (bare and learned)",
                "readout": "regression, classification",
            },
        ),
        png="results/figures/counting_exponents.png",
        table="results/figures/counting_exponents.csv",
    log:
        "results/logs/counting/exponents_figure.log",
    localrule: True
    conda:
        "../../envs/pipeline.yaml"
    script:
        "../scripts/counting_exponents_figure.py"
