# Study A: signal propagation at initialization. Theory rules write the mean-field tables; every
# measured model and every training run is a sweep item (transformer_stability/apjn/items.py,
# chunk rules in sweeps.smk); the rules here derive tables from the theory and the sweeps.
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
        settings=table_settings("apjn_theory_curves"),
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
        crossovers="results/apjn/preln_crossovers.csv",
    log:
        "results/logs/apjn/theory_depth.log",
    benchmark:
        "results/benchmarks/apjn/theory_depth.tsv"
    conda:
        "../../envs/pipeline.yaml"
    params:
        settings=table_settings("apjn_theory_depth"),
    script:
        "../scripts/apjn_theory_depth.py"


rule apjn_agreement:
    input:
        table="results/apjn/measured_curves.csv",
        sources=code("apjn_agreement.py"),
    output:
        table="results/apjn/agreement.csv",
        means="results/apjn/agreement_means.csv",
    log:
        "results/logs/apjn/agreement.log",
    localrule: True
    conda:
        "../../envs/pipeline.yaml"
    params:
        settings=table_settings("apjn_agreement"),
    script:
        "../scripts/apjn_agreement.py"


rule apjn_width_fit:
    input:
        table="results/apjn/width_agreement.csv",
        sources=code("apjn_width_fit.py"),
    output:
        excess="results/apjn/width_excess.csv",
        slopes="results/apjn/width_slopes.csv",
    log:
        "results/logs/apjn/width_fit.log",
    localrule: True
    conda:
        "../../envs/pipeline.yaml"
    params:
        settings=table_settings("apjn_width_fit"),
    script:
        "../scripts/apjn_width_fit.py"


rule apjn_tuning:
    input:
        table="results/apjn/trainability.csv",
        sources=code("apjn_tuning.py"),
    output:
        windows="results/apjn/tuning_windows.csv",
        pairs="results/apjn/matched_pairs.csv",
    log:
        "results/logs/apjn/tuning.log",
    localrule: True
    conda:
        "../../envs/pipeline.yaml"
    params:
        settings=table_settings("apjn_tuning"),
    script:
        "../scripts/apjn_tuning.py"


rule apjn_finite_n_compare:
    input:
        table="results/apjn/finite_n.csv",
        sources=code("apjn_finite_n_compare.py"),
    output:
        table="results/apjn/finite_n_compare.csv",
    log:
        "results/logs/apjn/finite_n_compare.log",
    benchmark:
        "results/benchmarks/apjn/finite_n_compare.tsv"
    localrule: True
    conda:
        "../../envs/pipeline.yaml"
    params:
        settings=table_settings("apjn_finite_n_compare"),
    script:
        "../scripts/apjn_finite_n_compare.py"


rule apjn_sensitivity_ratios:
    input:
        table="results/apjn/end_to_end.csv",
        sources=code("apjn_sensitivity_ratios.py"),
    output:
        table="results/apjn/sensitivity_ratios.csv",
    log:
        "results/logs/apjn/sensitivity_ratios.log",
    localrule: True
    conda:
        "../../envs/pipeline.yaml"
    params:
        settings=table_settings("apjn_sensitivity_ratios"),
    script:
        "../scripts/apjn_sensitivity_ratios.py"
