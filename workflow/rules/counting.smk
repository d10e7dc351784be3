# Study C: the parameter cost of counting with one attention layer (docs/counting.md).
# Every theory width and every (read-out, L) training is a sweep item
# (transformer_stability/counting/items.py), computed in chunk jobs and gathered into
# bmin_theory.csv + walls.csv and training.csv; small rules derive the rates, the reference laws
# and the exponent table, so the plot rules only draw tables.
from transformer_stability.counting.tables import (
    BminTheory,
    ConstructionPrecision,
    EmpiricalBmin,
    Exponents,
    Geometry,
    Precision,
    Rates,
    ReferenceSlopes,
    Residual,
    Success,
    Training,
    Walls,
)


rule counting_geometry:
    input:
        settings=settings_record("counting_geometry"),
        sources=code("counting_geometry.py"),
    output:
        result(Geometry),
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
        settings=settings_record("counting_residual"),
        sources=code("counting_residual.py"),
    output:
        result(Residual),
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
        settings=settings_record("counting_references"),
        theory=result(BminTheory),
        sources=code("counting_references.py"),
    output:
        result(ReferenceSlopes),
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
        settings=settings_record("counting_precision"),
        constructions=result(ConstructionPrecision),
        training=result(Training),
        sources=code("counting_precision.py"),
    output:
        result(Precision),
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
        settings=settings_record("counting_rates"),
        theory=result(BminTheory),
        training=result(Training),
        precision=result(Precision),
        sources=code("counting_rates.py"),
    output:
        success=result(Success),
        empirical=result(EmpiricalBmin),
        rates=result(Rates),
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
        settings=settings_record("counting_exponents"),
        rates=result(Rates),
        walls=result(Walls),
        sources=code("counting_exponents.py"),
    output:
        result(Exponents),
    log:
        "results/logs/counting/exponents.log",
    localrule: True
    conda:
        "../../envs/pipeline.yaml"
    params:
        settings=table_settings("counting_exponents"),
    script:
        "../scripts/counting_exponents.py"
