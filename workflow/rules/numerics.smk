# Study N: numerical stability of mixed-precision inference (docs/numerics.md).
# Every (model, α, storage group) of the GPT-2 runs and every model's weight magnitudes is a
# sweep item (transformer_stability/numerics/items.py), computed in chunk jobs and gathered into
# one table per sweep; the synthetic bound experiments are one job each.
from transformer_stability.numerics.items import group_items, weights_items

NUMERICS_GPT2 = sweep(
    "numerics_gpt2",
    group_items(config["numerics"], config["seed"]),
    {
        "numerics/gpt2_errors": "results/numerics/items/gpt2/{chunk}_errors.csv",
        "numerics/gpt2_recursion": "results/numerics/items/gpt2/{chunk}_recursion.csv",
    },
)
# one item per model: as many chunks as the GPT-2 runs get, at most one per model
NUMERICS_WEIGHTS = sweep(
    "numerics_gpt2",
    weights_items(config["numerics"], config["seed"]),
    {"numerics/gpt2_weights": "results/numerics/items/weights/{chunk}.csv"},
)


rule numerics_gpt2:
    input:
        sources=code("numerics_gpt2.py"),
        text=config["numerics"]["inputs"]["text"] or [],
    output:
        errors="results/numerics/items/gpt2/{chunk}_errors.csv",
        recursion="results/numerics/items/gpt2/{chunk}_recursion.csv",
    log:
        "results/logs/numerics/gpt2/{chunk}.log",
    benchmark:
        "results/benchmarks/numerics/gpt2/{chunk}.tsv"
    wildcard_constraints:
        chunk=one_of(NUMERICS_GPT2),
    conda:
        "../../envs/pipeline.yaml"
    resources:
        gpu=GPU_TOKENS,
    params:
        chunk_items=lambda wildcards: NUMERICS_GPT2[wildcards.chunk],
        device=config["device"],
    script:
        "../scripts/numerics_gpt2.py"


rule numerics_weights:
    input:
        sources=code("numerics_weights.py"),
    output:
        "results/numerics/items/weights/{chunk}.csv",
    log:
        "results/logs/numerics/weights/{chunk}.log",
    benchmark:
        "results/benchmarks/numerics/weights/{chunk}.tsv"
    wildcard_constraints:
        chunk=one_of(NUMERICS_WEIGHTS),
    conda:
        "../../envs/pipeline.yaml"
    params:
        chunk_items=lambda wildcards: NUMERICS_WEIGHTS[wildcards.chunk],
        device="cpu",  # a few norms of the weights
    script:
        "../scripts/numerics_weights.py"


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
