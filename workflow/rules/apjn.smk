# Study A: signal propagation at initialization (shared/specs/apjn.md).
# Heavy rules write tidy tables; plot rules only read them.


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
        apjn=config["apjn"],
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
        apjn=config["apjn"],
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
            labels={"figure": "A1 theory", "quantity": "APJN vs block"},
        ),
        png="results/figures/apjn_theory_curves.png",
    log:
        "results/logs/apjn/theory_curves_figure.log",
    conda:
        "../../envs/pipeline.yaml"
    script:
        "../scripts/apjn_theory_curves_figure.py"


rule apjn_depth_scaling_figure:
    input:
        depth="results/apjn/theory_depth.csv",
        asymptotics="results/apjn/asymptotics.csv",
    output:
        pdf=report(
            "results/figures/apjn_depth_scaling.pdf",
            caption="../report/apjn_depth_scaling.rst",
            category="Study A: signal propagation",
            labels={"figure": "A4", "quantity": "end-to-end APJN vs depth"},
        ),
        png="results/figures/apjn_depth_scaling.png",
    log:
        "results/logs/apjn/depth_scaling_figure.log",
    conda:
        "../../envs/pipeline.yaml"
    script:
        "../scripts/apjn_depth_scaling_figure.py"
