# Every figure of the registry (transformer_stability/registry.py): one plot job per figure,
# drawn from the tables its declaration names. Plot jobs depend on their plot module's source,
# so restyling a figure redraws it and reruns nothing else.
from jinja2 import Template


def figure_inputs(wildcards):
    figure = FIGURES[wildcards.figure]
    return {**figure.tables, "sources": module_sources(figure.plot.__module__)}


def figure_category(wildcards):
    return STUDY_CATEGORIES[FIGURES[wildcards.figure].study]


def figure_labels(wildcards):
    return FIGURES[wildcards.figure].labels(config)


def figure_caption(wildcards):
    """The figure's caption with the run's configuration filled in (workflow/report/figure.rst
    prints it)."""
    return Template(FIGURES[wildcards.figure].caption).render(config=config).strip()


rule figure:
    input:
        unpack(figure_inputs),
    output:
        pdf=report(
            "results/figures/{figure}.pdf",
            caption="../report/figure.rst",
            category=figure_category,
            labels=figure_labels,
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
        caption=figure_caption,
    script:
        "../scripts/figure.py"
