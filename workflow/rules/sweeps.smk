# One chunk rule per sweep, generated from the studies' sweep declarations
# (transformer_stability/registry.py: SWEEPS; each declared once in its study's items module).
# A chunk job computes its items and writes one chunk table per declared output; one gather job
# per table (gather.smk) puts the chunks' rows back in the sweep's item order.


def chunk_lookup(chunked):
    """The items of the job's chunk (a rule's params)."""
    return lambda wildcards: chunked[wildcards.chunk]


for sweep in SWEEPS.values():
    # the items see only the keys the sweep declares (its gathered tables record them)
    settings = config_slice(config, sweep.settings)
    section = settings[sweep_study(sweep).name]
    items = sweep.items(section, settings["seed"])
    chunked = chunks(sweep.rule, items)
    for output, table in sweep.tables.items():
        GATHERED[table] = (
            sweep.chunk_table(output),
            [i.id for i in items],
            list(chunked),
        )

    rule:
        name:
            sweep.rule
        input:
            # the script too: its path is formatted at run time (below), so Snakemake's own
            # code trigger does not see it
            sources=[
                *code(sweep.script),
                f"{workflow.basedir}/workflow/scripts/{sweep.script}",
            ],
            outside=sweep.inputs(section),
        output:
            **{output: sweep.chunk_table(output) for output in sweep.tables},
        log:
            f"results/logs/{sweep.rule}/{{chunk}}.log",
        benchmark:
            f"results/benchmarks/{sweep.rule}/{{chunk}}.tsv"
        wildcard_constraints:
            chunk=one_of(chunked),
        conda:
            "../../envs/pipeline.yaml"
        resources:
            gpu=GPU_TOKENS if sweep.gpu else 0,
        params:
            chunk_items=chunk_lookup(chunked),
            device=settings["device"] if sweep.gpu else "cpu",
            script=sweep.script,
        script:
            # a rule's script is read when its job runs, after this loop has moved on: take the
            # name from the job's own params, not from the loop variable
            "../scripts/{params.script}"
