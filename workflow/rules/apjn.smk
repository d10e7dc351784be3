# Study A: signal propagation at initialization. Theory rules write the mean-field tables; every
# measured model and every training run is a sweep item (transformer_stability/apjn/items.py,
# chunk rules in sweeps.smk); the rules here derive tables from the theory and the sweeps.
from transformer_stability.apjn.tables import (
    Agreement,
    AgreementMeans,
    Asymptotics,
    DepthLaws,
    EndToEnd,
    FiniteN,
    FiniteNCompare,
    MatchedPairs,
    MeasuredCurves,
    PrelnCrossovers,
    PrelnTokens,
    SensitivityRatios,
    TheoryCurves,
    TheoryDepth,
    Trainability,
    TuningStatistics,
    TuningWindows,
    WidthAgreement,
    WidthExcess,
    WidthSlopes,
)


rule apjn_theory_curves:
    input:
        settings=settings_record("apjn_theory_curves"),
        sources=code("apjn_theory_curves.py"),
    output:
        result(TheoryCurves),
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
        settings=settings_record("apjn_theory_depth"),
        sources=code("apjn_theory_depth.py"),
    output:
        depth=result(TheoryDepth),
        asymptotics=result(Asymptotics),
        laws=result(DepthLaws),
        tokens=result(PrelnTokens),
        crossovers=result(PrelnCrossovers),
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
        settings=settings_record("apjn_agreement"),
        table=result(MeasuredCurves),
        sources=code("apjn_agreement.py"),
    output:
        table=result(Agreement),
        means=result(AgreementMeans),
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
        settings=settings_record("apjn_width_fit"),
        table=result(WidthAgreement),
        agreement=result(Agreement),
        sources=code("apjn_width_fit.py"),
    output:
        excess=result(WidthExcess),
        slopes=result(WidthSlopes),
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
        settings=settings_record("apjn_tuning"),
        table=result(Trainability),
        sources=code("apjn_tuning.py"),
    output:
        windows=result(TuningWindows),
        pairs=result(MatchedPairs),
        statistics=result(TuningStatistics),
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
        settings=settings_record("apjn_finite_n_compare"),
        table=result(FiniteN),
        sources=code("apjn_finite_n_compare.py"),
    output:
        table=result(FiniteNCompare),
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
        settings=settings_record("apjn_sensitivity_ratios"),
        table=result(EndToEnd),
        sources=code("apjn_sensitivity_ratios.py"),
    output:
        table=result(SensitivityRatios),
    log:
        "results/logs/apjn/sensitivity_ratios.log",
    localrule: True
    conda:
        "../../envs/pipeline.yaml"
    params:
        settings=table_settings("apjn_sensitivity_ratios"),
    script:
        "../scripts/apjn_sensitivity_ratios.py"
