# One gather job per sweep table registered by `sweep` (common.smk): the chunk tables -> one
# tidy table, rows in the sweep's item order whatever the chunking.


rule gather:
    input:
        settings=settings_record(
            "gather", jobs=[{"table": table} for table in GATHERED]
        ),
        chunks=lambda wildcards: expand(
            GATHERED[wildcards.table][0], chunk=GATHERED[wildcards.table][2]
        ),
        sources=code("gather.py"),
    output:
        "results/{table}.csv",
    log:
        "results/logs/gather/{table}.log",
    wildcard_constraints:
        table=one_of(GATHERED),
    localrule: True
    conda:
        "../../envs/pipeline.yaml"
    params:
        order=lambda wildcards: GATHERED[wildcards.table][1],
        settings=table_settings("gather"),
    script:
        "../scripts/gather.py"
