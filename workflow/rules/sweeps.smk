# One chunk rule per sweep, generated from the studies' sweep declarations
# (transformer_stability/registry.py: SWEEPS; each declared once in its study's pipeline module).
# A chunk job computes its items and writes one chunk table per declared output; one gather job
# per table (gather.smk) puts the chunks' rows back in the sweep's item order. A sweep whose
# items are trained in segments (the cluster plan's time limit, work.segments) gets a segment
# rule: segment k of a chunk resumes from the checkpoint of segment k - 1 and writes its own;
# the chunk job runs the last segment from the last checkpoint. Checkpoints are temp(): deleted
# once the next segment has finished.


def chunk_lookup(chunked):
    """The items of the job's chunk (a rule's params)."""
    return lambda wildcards: chunked[wildcards.chunk]


def resume_lookup(checkpoint, segment):
    """The checkpoint a segment resumes from (none for the first); `segment` maps the job's
    wildcards to its segment number."""

    def resume(wildcards):
        k = segment(wildcards)
        return (
            [checkpoint.format(chunk=wildcards.chunk, segment=k - 1)] if k > 1 else []
        )

    return resume


def priority_lookup(priorities):
    """The job's chunk's priority (sweeps.chunk_priorities)."""
    return lambda wildcards: priorities[wildcards.chunk]


def segment_number(wildcards):
    return int(wildcards.segment)


for sweep in SWEEPS.values():
    # the items see only the keys the sweep declares (its gathered tables record them)
    settings = config_slice(config, sweep.settings)
    section = settings[sweep_study(sweep).name]
    items = sweep.items(section, settings["seed"])
    chunked = chunks(sweep, items)
    priorities = chunk_priorities(chunked, chunk_cost(sweep))
    priority = priority_lookup(priorities)
    for path in sweep.inputs(section):
        FEEDING[path] = max(FEEDING.get(path, 0), *priorities.values())
    segments = sweep_segments(items)
    # stale chunks are known by the settings their gathered tables record (chunk tables record
    # only their rows): a changed setting reruns every chunk, then the gather
    gathered = [result(model) for model in sweep.tables.values()]
    settings_file = record_settings(
        settings_path(f"results/sweeps/{sweep.rule}"), settings, gathered
    )
    for output in sweep.tables:
        GATHERED[sweep.gathered(output)] = (
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
                as_input(f"{workflow.basedir}/workflow/scripts/{sweep.script}"),
            ],
            settings=settings_file,
            outside=sweep.inputs(section),
            resume=resume_lookup(
                sweep.checkpoint, lambda wildcards, last=segments: last
            ),
        output:
            **{output: sweep.chunk_table(output) for output in sweep.tables},
        log:
            f"results/logs/{sweep.rule}/{{chunk}}.log",
        benchmark:
            f"results/benchmarks/{sweep.rule}/{{chunk}}.tsv"
        wildcard_constraints:
            chunk=one_of(chunked),
        priority: priority
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

    if segments > 1:

        rule:
            name:
                sweep.segment_rule
            input:
                sources=[
                    *code(sweep.script),
                    as_input(f"{workflow.basedir}/workflow/scripts/{sweep.script}"),
                ],
                settings=settings_file,
                outside=sweep.inputs(section),
                resume=resume_lookup(sweep.checkpoint, segment_number),
            output:
                temp(sweep.checkpoint),
            log:
                f"results/logs/{sweep.segment_rule}/{{chunk}}_segment{{segment}}.log",
            benchmark:
                f"results/benchmarks/{sweep.segment_rule}/{{chunk}}_segment{{segment}}.tsv"
            wildcard_constraints:
                chunk=one_of(chunked),
                segment=one_of(map(str, range(1, segments))),
            priority: priority
            conda:
                "../../envs/pipeline.yaml"
            resources:
                gpu=GPU_TOKENS if sweep.gpu else 0,
            params:
                chunk_items=chunk_lookup(chunked),
                device=settings["device"] if sweep.gpu else "cpu",
                script=sweep.script,
                segment=segment_number,
            script:
                "../scripts/{params.script}"
