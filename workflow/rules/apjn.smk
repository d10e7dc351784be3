# Study A: signal propagation at initialization (shared/specs/apjn.md).
# Heavy rules write tidy tables; plot rules only read them.

NORM_NAMES = {"ln": "pre-LN", "derf": "Derf", "dyt": "DyT"}
# The models of config['apjn']['variants'], as a report label: "pre-LN, Derf α=1, DyT α=1".
APJN_MODELS = ", ".join(
    NORM_NAMES[v["norm"]] + (f" α={v['alpha']:g}" if v.get("alpha") else "")
    for v in config["apjn"]["variants"]
)
# The trained models, e.g. "pre-LN, Derf, DyT (α₀ = 0.1, 1, 8)".
APJN_TRAINED = "pre-LN, {} (α₀ = {})".format(
    ", ".join(NORM_NAMES[norm] for norm in config["apjn"]["train"]["norms"]),
    ", ".join(f"{alpha:g}" for alpha in config["apjn"]["train"]["alphas"]),
)


rule apjn_theory_curves:
    output:
        "results/apjn/theory_curves.csv",
    log:
        "results/logs/apjn/theory_curves.log",
    benchmark:
        "results/benchmarks/apjn/theory_curves.tsv"
    conda:
        "../../envs/pipeline.yaml"
    params:
        apjn=apjn_params(*APJN_MODEL_KEYS, "variants", "theory"),
        seed=config["seed"],
    script:
        "../scripts/apjn_theory_curves.py"


rule apjn_theory_depth:
    output:
        depth="results/apjn/theory_depth.csv",
        asymptotics="results/apjn/asymptotics.csv",
    log:
        "results/logs/apjn/theory_depth.log",
    benchmark:
        "results/benchmarks/apjn/theory_depth.tsv"
    conda:
        "../../envs/pipeline.yaml"
    params:
        apjn=apjn_params(*APJN_MODEL_KEYS, "variants", "theory"),
        seed=config["seed"],
    script:
        "../scripts/apjn_theory_depth.py"


rule apjn_theory_curves_figure:
    input:
        "results/apjn/theory_curves.csv",
    output:
        pdf=report(
            "results/figures/apjn_theory_curves.pdf",
            caption="../report/apjn_theory_curves.rst",
            category="Study A: signal propagation",
            labels={
                "figure": "theory",
                "quantity": "APJN vs block (mean-field theory)",
                "models": APJN_MODELS,
                "input": "permutation-symmetric",
            },
        ),
        png="results/figures/apjn_theory_curves.png",
    log:
        "results/logs/apjn/theory_curves_figure.log",
    localrule: True
    conda:
        "../../envs/pipeline.yaml"
    script:
        "../scripts/apjn_theory_curves_figure.py"


rule apjn_depth_scaling_figure:
    input:
        depth="results/apjn/theory_depth.csv",
        asymptotics="results/apjn/asymptotics.csv",
        measured="results/apjn/depth_measured.csv",
    output:
        pdf=report(
            "results/figures/apjn_depth_scaling.pdf",
            caption="../report/apjn_depth_scaling.rst",
            category="Study A: signal propagation",
            labels={
                "figure": "A4",
                "quantity": "end-to-end APJN vs depth",
                "models": APJN_MODELS,
                "input": "permutation-symmetric",
            },
        ),
        png="results/figures/apjn_depth_scaling.png",
    log:
        "results/logs/apjn/depth_scaling_figure.log",
    localrule: True
    conda:
        "../../envs/pipeline.yaml"
    script:
        "../scripts/apjn_depth_scaling_figure.py"


rule apjn_measured_curves:
    output:
        "results/apjn/measured_curves.csv",
    log:
        "results/logs/apjn/measured_curves.log",
    benchmark:
        "results/benchmarks/apjn/measured_curves.tsv"
    conda:
        "../../envs/pipeline.yaml"
    threads: workflow.cores
    resources:
        gpu=1,
    params:
        apjn=apjn_params(*APJN_MODEL_KEYS, "variants", "measure", "images"),
        seed=config["seed"],
        device=config["device"],
        measurement="measured_curves",
        dtype=config["apjn"]["measure"]["dtype"],
    script:
        "../scripts/apjn_measure.py"


rule apjn_sensitivity:
    output:
        "results/apjn/sensitivity.csv",
    log:
        "results/logs/apjn/sensitivity.log",
    benchmark:
        "results/benchmarks/apjn/sensitivity.tsv"
    conda:
        "../../envs/pipeline.yaml"
    threads: workflow.cores
    resources:
        gpu=1,
    params:
        apjn=apjn_params(*APJN_MODEL_KEYS, "measure", "sensitivity"),
        seed=config["seed"],
        device=config["device"],
        measurement="sensitivity",
        dtype=config["apjn"]["measure"]["dtype"],
    script:
        "../scripts/apjn_measure.py"


rule apjn_depth_measured:
    output:
        "results/apjn/depth_measured.csv",
    log:
        "results/logs/apjn/depth_measured.log",
    benchmark:
        "results/benchmarks/apjn/depth_measured.tsv"
    conda:
        "../../envs/pipeline.yaml"
    threads: workflow.cores
    resources:
        gpu=1,
    params:
        apjn=apjn_params(*APJN_MODEL_KEYS, "variants", "measure", "depth_scaling"),
        seed=config["seed"],
        device=config["device"],
        measurement="depth_points",
        dtype=config["apjn"]["measure"]["dtype"],
    script:
        "../scripts/apjn_measure.py"


rule apjn_trainability:
    output:
        "results/apjn/trainability.csv",
    log:
        "results/logs/apjn/trainability.log",
    benchmark:
        "results/benchmarks/apjn/trainability.tsv"
    conda:
        "../../envs/pipeline.yaml"
    threads: workflow.cores
    resources:
        gpu=1,
    params:
        apjn=apjn_params("train"),
        seed=config["seed"],
        device=config["device"],
        measurement="trainability",
        dtype="float32",
    script:
        "../scripts/apjn_measure.py"


rule apjn_agreement:
    input:
        "results/apjn/measured_curves.csv",
    output:
        "results/apjn/agreement.csv",
    log:
        "results/logs/apjn/agreement.log",
    localrule: True
    conda:
        "../../envs/pipeline.yaml"
    script:
        "../scripts/apjn_agreement.py"


# The table each measured-data figure is drawn from.
APJN_FIGURE_TABLES = {
    "permsym": "results/apjn/measured_curves.csv",
    "images": "results/apjn/measured_curves.csv",
    "token_stats": "results/apjn/measured_curves.csv",
    "gmfe": "results/apjn/agreement.csv",
    "sensitivity": "results/apjn/sensitivity.csv",
    "trainability": "results/apjn/trainability.csv",
}
# Report labels of each measured-data figure (same keys as the other Study A figures).
APJN_FIGURE_LABELS = {
    figure: dict(zip(("figure", "quantity", "models", "input"), labels))
    for figure, labels in {
        "permsym": ("A1", "APJN vs block", APJN_MODELS, "permutation-symmetric"),
        "images": ("A2", "per-image APJN vs block", APJN_MODELS, "natural images"),
        "gmfe": ("A3", "GMFE by depth region", APJN_MODELS, "both"),
        "sensitivity": (
            "A5",
            "end-to-end APJN vs α₀ and init multipliers",
            "Derf, DyT (α₀ sweep); pre-LN, Derf (multipliers)",
            "permutation-symmetric",
        ),
        "token_stats": ("A6", "token statistics q, p/q vs block", APJN_MODELS, "both"),
        "trainability": (
            "A7",
            "loss and accuracy after training",
            APJN_TRAINED,
            f"{config['apjn']['train']['data']['source']} task",
        ),
    }.items()
}


rule apjn_measured_figure:
    input:
        lambda wildcards: APJN_FIGURE_TABLES[wildcards.figure],
    output:
        pdf=report(
            "results/figures/apjn_{figure}.pdf",
            caption="../report/apjn_measured_figure.rst",
            category="Study A: signal propagation",
            labels=lambda wildcards: APJN_FIGURE_LABELS[wildcards.figure],
        ),
        png="results/figures/apjn_{figure}.png",
    log:
        "results/logs/apjn/{figure}_figure.log",
    wildcard_constraints:
        figure="|".join(APJN_FIGURE_TABLES),
    localrule: True
    conda:
        "../../envs/pipeline.yaml"
    params:
        study="apjn",
        plot=lambda wildcards: f"plot_{wildcards.figure}",
    script:
        "../scripts/table_figure.py"
