# Study A: signal propagation at initialization. Theory rules write the mean-field tables; every
# measured model and every training run is a sweep item (transformer_stability/apjn/items.py),
# computed in chunk jobs and gathered into one table per sweep.
from transformer_stability.apjn.items import (
    curve_items,
    depth_items,
    sensitivity_items,
    train_items,
    width_items,
)
from transformer_stability.apjn.study import ApjnStudy

APJN_STUDY = ApjnStudy.from_config(config["apjn"])
APJN_CURVES = sweep(
    "apjn_curves",
    curve_items(config["apjn"], config["seed"]),
    {"apjn/measured_curves": "results/apjn/items/curves/{chunk}.csv"},
)
APJN_SENSITIVITY = sweep(
    "apjn_end_to_end",
    sensitivity_items(config["apjn"], config["seed"]),
    {"apjn/sensitivity": "results/apjn/items/sensitivity/{chunk}.csv"},
)
APJN_DEPTH = sweep(
    "apjn_end_to_end",
    depth_items(config["apjn"], config["seed"]),
    {"apjn/depth_measured": "results/apjn/items/depth/{chunk}.csv"},
)
APJN_WIDTH = sweep(
    "apjn_width",
    width_items(config["apjn"], config["seed"]),
    {"apjn/width_agreement": "results/apjn/items/width/{chunk}.csv"},
)
APJN_TRAIN = sweep(
    "apjn_train",
    train_items(config["apjn"], config["seed"]),
    {"apjn/trainability": "results/apjn/items/train/{chunk}.csv"},
)


rule apjn_theory_curves:
    input:
        sources=code("apjn_theory_curves.py"),
    output:
        "results/apjn/theory_curves.csv",
    log:
        "results/logs/apjn/theory_curves.log",
    benchmark:
        "results/benchmarks/apjn/theory_curves.tsv"
    conda:
        "../../envs/pipeline.yaml"
    params:
        study=APJN_STUDY,
        seed=config["seed"],
    script:
        "../scripts/apjn_theory_curves.py"


rule apjn_theory_depth:
    input:
        sources=code("apjn_theory_depth.py"),
    output:
        depth="results/apjn/theory_depth.csv",
        asymptotics="results/apjn/asymptotics.csv",
        laws="results/apjn/depth_laws.csv",
        tokens="results/apjn/preln_tokens.csv",
    log:
        "results/logs/apjn/theory_depth.log",
    benchmark:
        "results/benchmarks/apjn/theory_depth.tsv"
    conda:
        "../../envs/pipeline.yaml"
    params:
        study=APJN_STUDY,
        seed=config["seed"],
    script:
        "../scripts/apjn_theory_depth.py"


rule apjn_curves:
    input:
        sources=code("apjn_curves.py"),
    output:
        "results/apjn/items/curves/{chunk}.csv",
    log:
        "results/logs/apjn/curves/{chunk}.log",
    benchmark:
        "results/benchmarks/apjn/curves/{chunk}.tsv"
    wildcard_constraints:
        chunk=one_of(APJN_CURVES),
    conda:
        "../../envs/pipeline.yaml"
    resources:
        gpu=GPU_TOKENS,
    params:
        chunk_items=lambda wildcards: APJN_CURVES[wildcards.chunk],
        device=config["device"],
    script:
        "../scripts/apjn_curves.py"


rule apjn_width:
    input:
        sources=code("apjn_width.py"),
    output:
        "results/apjn/items/width/{chunk}.csv",
    log:
        "results/logs/apjn/width/{chunk}.log",
    benchmark:
        "results/benchmarks/apjn/width/{chunk}.tsv"
    wildcard_constraints:
        chunk=one_of(APJN_WIDTH),
    conda:
        "../../envs/pipeline.yaml"
    resources:
        gpu=GPU_TOKENS,
    params:
        chunk_items=lambda wildcards: APJN_WIDTH[wildcards.chunk],
        device=config["device"],
    script:
        "../scripts/apjn_width.py"


rule apjn_sensitivity:
    input:
        sources=code("apjn_end_to_end.py"),
    output:
        "results/apjn/items/sensitivity/{chunk}.csv",
    log:
        "results/logs/apjn/sensitivity/{chunk}.log",
    benchmark:
        "results/benchmarks/apjn/sensitivity/{chunk}.tsv"
    wildcard_constraints:
        chunk=one_of(APJN_SENSITIVITY),
    conda:
        "../../envs/pipeline.yaml"
    resources:
        gpu=GPU_TOKENS,
    params:
        chunk_items=lambda wildcards: APJN_SENSITIVITY[wildcards.chunk],
        device=config["device"],
    script:
        "../scripts/apjn_end_to_end.py"


rule apjn_depth_points:
    input:
        sources=code("apjn_end_to_end.py"),
    output:
        "results/apjn/items/depth/{chunk}.csv",
    log:
        "results/logs/apjn/depth/{chunk}.log",
    benchmark:
        "results/benchmarks/apjn/depth/{chunk}.tsv"
    wildcard_constraints:
        chunk=one_of(APJN_DEPTH),
    conda:
        "../../envs/pipeline.yaml"
    resources:
        gpu=GPU_TOKENS,
    params:
        chunk_items=lambda wildcards: APJN_DEPTH[wildcards.chunk],
        device=config["device"],
    script:
        "../scripts/apjn_end_to_end.py"


rule apjn_train:
    input:
        sources=code("apjn_train.py"),
    output:
        "results/apjn/items/train/{chunk}.csv",
    log:
        "results/logs/apjn/train/{chunk}.log",
    benchmark:
        "results/benchmarks/apjn/train/{chunk}.tsv"
    wildcard_constraints:
        chunk=one_of(APJN_TRAIN),
    conda:
        "../../envs/pipeline.yaml"
    resources:
        gpu=GPU_TOKENS,
    params:
        chunk_items=lambda wildcards: APJN_TRAIN[wildcards.chunk],
        device=config["device"],
    script:
        "../scripts/apjn_train.py"


rule apjn_agreement:
    input:
        curves="results/apjn/measured_curves.csv",
        sources=code("apjn_agreement.py"),
    output:
        "results/apjn/agreement.csv",
    log:
        "results/logs/apjn/agreement.log",
    localrule: True
    conda:
        "../../envs/pipeline.yaml"
    params:
        compare_from=config["apjn"]["images"]["compare_from_block"],
    script:
        "../scripts/apjn_agreement.py"
