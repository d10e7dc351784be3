# Study N: numerical stability of mixed-precision inference (docs/numerics.md).
# Every (model, α, storage group) of the GPT-2 runs and every model's weight magnitudes is a
# sweep item (transformer_stability/numerics/items.py, chunk rules in sweeps.smk); the synthetic
# bound experiments are one job each.
from transformer_stability.numerics.tables import (
    Gpt2Training,
    SinkEmergence,
    SinkSoftmax,
    SinkTraining,
)
from transformer_stability.numerics.items import BOUND_EXPERIMENTS
from transformer_stability.numerics.spec import SINK_DIR


rule numerics_bounds:
    input:
        settings=settings_record(
            "numerics_bounds",
            jobs=[{"experiment": e} for e in BOUND_EXPERIMENTS],
        ),
        sources=code("numerics_bounds.py"),
    output:
        "results/numerics/{experiment}.csv",
    log:
        "results/logs/numerics/{experiment}.log",
    benchmark:
        "results/benchmarks/numerics/{experiment}.tsv"
    wildcard_constraints:
        experiment=one_of(BOUND_EXPERIMENTS),
    conda:
        "../../envs/pipeline.yaml"
    params:
        settings=table_settings("numerics_bounds"),
    script:
        "../scripts/numerics_bounds.py"


# The trained GPT-2 (numerics/training.py), offline: WordNet's glosses as shipped by timm, a
# byte-level BPE tokenizer trained on them, and every `weights: trained` model trained on them;
# the GPT-2 sweeps load them from results/numerics/trained/models/<name> like any checkpoint.
# the tokenizer's settings are recorded by the trained models' table, which it feeds
TOKENIZER_KEYS = ["numerics.training.vocab", "numerics.training.heldout_every"]


rule numerics_tokenizer:
    input:
        sources=code("numerics_tokenizer.py"),
        settings=settings_record(
            "numerics_tokenizer",
            settings=lambda wildcards: config_slice(config, TOKENIZER_KEYS),
            tables=lambda wildcards: [result(Gpt2Training)],
        ),
    output:
        tokenizer=directory("results/numerics/trained/tokenizer"),
        train="results/numerics/trained/train.txt",
        heldout="results/numerics/trained/heldout.txt",
    log:
        "results/logs/numerics/tokenizer.log",
    benchmark:
        "results/benchmarks/numerics/tokenizer.tsv"
    priority: feeding_priority("results/numerics/trained/heldout.txt")
    conda:
        "../../envs/pipeline.yaml"
    params:
        vocab=config["numerics"]["training"]["vocab"],
        heldout_every=config["numerics"]["training"]["heldout_every"],
    script:
        "../scripts/numerics_tokenizer.py"


rule numerics_train:
    input:
        sources=code("numerics_train.py"),
        settings=settings_record("numerics_train"),
        tokenizer="results/numerics/trained/tokenizer",
        train="results/numerics/trained/train.txt",
        heldout="results/numerics/trained/heldout.txt",
    output:
        models=directory("results/numerics/trained/models"),
        table=result(Gpt2Training),
    log:
        "results/logs/numerics/train.log",
    benchmark:
        "results/benchmarks/numerics/train.tsv"
    priority: feeding_priority("results/numerics/trained/models")
    conda:
        "../../envs/pipeline.yaml"
    params:
        settings=table_settings("numerics_train"),
    script:
        "../scripts/numerics_train.py"


# Claim N.9's model (numerics/backcopy.py): a GPT-2 trained on the Bigram-Backcopy task, its
# heads measured from the random initialization to the end of training, and the softmax
# evaluated on its attention rows at both ends (claim N.3 on a trained model). The trained model
# and its held-out sequences are saved for the GPT-2 sweeps, which run it like every model.
rule numerics_sinks:
    input:
        settings=settings_record("numerics_sinks"),
        sources=code("numerics_sinks.py"),
    output:
        emergence=result(SinkEmergence),
        training=result(SinkTraining),
        softmax=result(SinkSoftmax),
        model=directory(SINK_DIR),
    log:
        "results/logs/numerics/sinks.log",
    benchmark:
        "results/benchmarks/numerics/sinks.tsv"
    priority: feeding_priority(SINK_DIR)
    conda:
        "../../envs/pipeline.yaml"
    params:
        settings=table_settings("numerics_sinks"),
    script:
        "../scripts/numerics_sinks.py"
