# Every figure of the registry (transformer_stability/registry.py): one plot job per figure,
# drawn from the tables its declaration names. Plot jobs depend on their plot module's source,
# so restyling a figure redraws it and reruns nothing else.
from jinja2 import Template


def figure_inputs(wildcards):
    figure = FIGURES[wildcards.figure]
    return {**figure.tables, "sources": module_sources(figure.plot.__module__)}


rule figure:
    input:
        unpack(figure_inputs),
    output:
        pdf=report(
            "results/figures/{figure}.pdf",
            caption="../report/figure.rst",
            category=lambda wildcards: STUDY_CATEGORIES[FIGURES[wildcards.figure].study],
            labels=lambda wildcards: FIGURES[wildcards.figure].labels(config),
        ),
        png="results/figures/{figure}.png",
    log:
        "results/logs/figures/{figure}.log",
    wildcard_constraints:
        figure=one_of(FIGURES),
    localrule: True
    conda:
        "../../envs/pipeline.yaml"
    params:
        caption=lambda wildcards: Template(FIGURES[wildcards.figure].caption).render(
            config=config
        ),
    script:
        "../scripts/figure.py"
