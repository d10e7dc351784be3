# Study C: the parameter cost of counting with one attention layer (docs/counting.md).
# Every theory width and every (read-out, L) training is a sweep item
# (transformer_stability/counting/items.py), computed in chunk jobs and gathered into
# bmin_theory.csv + walls.csv and training.csv; small rules derive the rates, the reference laws
# and the exponent table, so the plot rules only draw tables.
rule counting_geometry:
    input:
        sources=code("counting_geometry.py"),
    output:
        "results/counting/geometry.csv",
    log:
        "results/logs/counting/geometry.log",
    benchmark:
        "results/benchmarks/counting/geometry.tsv"
    conda:
        "../../envs/pipeline.yaml"
    params:
        settings=table_settings("counting_geometry"),
    script:
        "../scripts/counting_geometry.py"


rule counting_residual:
    input:
        sources=code("counting_residual.py"),
    output:
        "results/counting/residual.csv",
    log:
        "results/logs/counting/residual.log",
    benchmark:
        "results/benchmarks/counting/residual.tsv"
    conda:
        "../../envs/pipeline.yaml"
    params:
        settings=table_settings("counting_residual"),
    script:
        "../scripts/counting_residual.py"


rule counting_references:
    input:
        theory="results/counting/bmin_theory.csv",
        sources=code("counting_references.py"),
    output:
        "results/counting/reference_slopes.csv",
    log:
        "results/logs/counting/references.log",
    localrule: True
    conda:
        "../../envs/pipeline.yaml"
    params:
        settings=table_settings("counting_references"),
    script:
        "../scripts/counting_references.py"


rule counting_precision:
    input:
        constructions="results/counting/construction_precision.csv",
        training="results/counting/training.csv",
        sources=code("counting_precision.py"),
    output:
        "results/counting/precision.csv",
    log:
        "results/logs/counting/precision.log",
    localrule: True
    conda:
        "../../envs/pipeline.yaml"
    params:
        settings=table_settings("counting_precision"),
    script:
        "../scripts/counting_precision.py"


rule counting_rates:
    input:
        theory="results/counting/bmin_theory.csv",
        training="results/counting/training.csv",
        precision="results/counting/precision.csv",
        sources=code("counting_rates.py"),
    output:
        success="results/counting/success.csv",
        empirical="results/counting/empirical_bmin.csv",
        rates="results/counting/rates.csv",
    log:
        "results/logs/counting/rates.log",
    localrule: True
    conda:
        "../../envs/pipeline.yaml"
    params:
        settings=table_settings("counting_rates"),
    script:
        "../scripts/counting_rates.py"


rule counting_exponents:
    input:
        rates="results/counting/rates.csv",
        walls="results/counting/walls.csv",
        sources=code("counting_exponents.py"),
    output:
        "results/counting/exponents.csv",
    log:
        "results/logs/counting/exponents.log",
    localrule: True
    conda:
        "../../envs/pipeline.yaml"
    params:
        settings=table_settings("counting_exponents"),
    script:
        "../scripts/counting_exponents.py"
