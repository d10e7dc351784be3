# Study N: numerical stability of mixed-precision inference (shared/specs/numerics.md).
# Heavy rules (GPT-2 runs, synthetic bound experiments) write tidy tables; plot rules only read.
from transformer_stability.config import numerics_model_name

NUMERICS_MODELS = [
    numerics_model_name(m["weights"], m["size"]) for m in config["numerics"]["models"]
]


def numerics_params(*keys):
    """The given sections of config['numerics'], as a rule's params."""
    return {key: config["numerics"][key] for key in keys}



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
        gpu=GPU_TOKENS,
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
