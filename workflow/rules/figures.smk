# Every figure of the registry (transformer_stability/registry.py): one plot job per figure,
# drawn from the tables its declaration names. Plot jobs depend on their plot module's source,
# so restyling a figure redraws it and reruns nothing else.
rule figure:
    input:
        unpack(figure_inputs),
    output:
        pdf=report(
            "results/figures/{figure}.pdf",
            caption="../report/figure.rst",
            category=figure_category,
            labels=figure_labels(IMAGE_FORMATS["pdf"]),
        ),
        png=report(
            "results/figures/{figure}.png",
            caption="../report/figure.rst",
            category=figure_category,
            labels=figure_labels(IMAGE_FORMATS["png"]),
        ),
    log:
        "results/logs/figures/{figure}.log",
    wildcard_constraints:
        figure=one_of(FIGURES),
    localrule: True
    conda:
        "../../envs/pipeline.yaml"
    params:
        caption=figure_caption,
        module=lambda wildcards: FIGURES[wildcards.figure].plot.__module__,
    script:
        "../scripts/figure.py"
