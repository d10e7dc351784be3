# Study N: numerical stability of mixed-precision inference (shared/specs/numerics.md).
# Heavy rules (GPT-2 runs, synthetic bound experiments) write tidy tables; plot rules only read.


rule numerics_gpt2:
    output:
        errors="results/numerics/gpt2/{model}_errors.csv",
        recursion="results/numerics/gpt2/{model}_recursion.csv",
        weights="results/numerics/gpt2/{model}_weights.csv",
    log:
        "results/logs/numerics/gpt2_{model}.log",
    benchmark:
        "results/benchmarks/numerics/gpt2_{model}.tsv"
    wildcard_constraints:
        model="|".join(NUMERICS_MODELS),
    conda:
        "../../envs/pipeline.yaml"
    threads: workflow.cores
    resources:
        gpu=1,
    params:
        numerics=numerics_params("models", "inputs", "alphas", "precisions"),
        seed=config["seed"],
        device=config["device"],
    script:
        "../scripts/numerics_gpt2.py"


rule numerics_gpt2_tables:
    input:
        errors=expand("results/numerics/gpt2/{model}_errors.csv", model=NUMERICS_MODELS),
        recursion=expand(
            "results/numerics/gpt2/{model}_recursion.csv", model=NUMERICS_MODELS
        ),
        weights=expand(
            "results/numerics/gpt2/{model}_weights.csv", model=NUMERICS_MODELS
        ),
    output:
        errors="results/numerics/gpt2_errors.csv",
        recursion="results/numerics/gpt2_recursion.csv",
        weights="results/numerics/gpt2_weights.csv",
    log:
        "results/logs/numerics/gpt2_tables.log",
    localrule: True
    conda:
        "../../envs/pipeline.yaml"
    script:
        "../scripts/numerics_concat.py"


rule numerics_bounds:
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
    threads: workflow.cores
    params:
        section=lambda wildcards: config["numerics"][wildcards.experiment],
        seed=config["seed"],
    script:
        "../scripts/numerics_bounds.py"


rule numerics_figure:
    input:
        lambda wildcards: NUMERICS_FIGURE_DATA[wildcards.figure],
    output:
        pdf=report(
            "results/figures/numerics_{figure}.pdf",
            caption="../report/numerics_figure.rst",
            category="Study N: numerics",
            labels=lambda wildcards: NUMERICS_FIGURE_LABELS[wildcards.figure],
        ),
        png="results/figures/numerics_{figure}.png",
    log:
        "results/logs/numerics/figure_{figure}.log",
    wildcard_constraints:
        figure="|".join(NUMERICS_FIGURE_DATA),
    localrule: True
    conda:
        "../../envs/pipeline.yaml"
    params:
        study="numerics",
        plot=lambda wildcards: f"{wildcards.figure}_figure",
    script:
        "../scripts/table_figure.py"
