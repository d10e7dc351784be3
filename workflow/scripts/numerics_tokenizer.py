"""Rule numerics_tokenizer: WordNet's glosses (from the installed timm) -> the training and
held-out text, and a byte-level BPE tokenizer trained on the former (save_pretrained)."""

from pathlib import Path

from transformer_stability.logs import setup_logging
from transformer_stability.numerics.training import write_corpus

setup_logging(snakemake.log[0])
write_corpus(
    snakemake.params.vocab,
    snakemake.params.heldout_every,
    Path(snakemake.output.tokenizer),
    [Path(snakemake.output.train), Path(snakemake.output.heldout)],
)
