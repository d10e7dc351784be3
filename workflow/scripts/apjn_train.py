"""Rule apjn_train: one chunk of trainability groups (the last segment of each, resumed from the
previous segment's checkpoint where there is one) -> one chunk table, one row per run, tagged
with its item. Rule apjn_train_segment: one earlier segment of them -> their checkpoint."""

from transformer_stability.apjn.tables import Trainability
from transformer_stability.apjn.training import train_segment, train_table
from transformer_stability.registry import SWEEPS
from transformer_stability.sweep_jobs import chunk_job, load_checkpoint, segment_job

if snakemake.rule == SWEEPS["apjn_train"].segment_rule:
    segment_job(snakemake, train_segment)
else:
    resumed = load_checkpoint(snakemake.input.resume)
    chunk_job(
        snakemake,
        lambda item, device: train_table(item, device, resumed.get(item.id)),
        Trainability,
        trains=True,
    )
