"""The token ids a GPT-2 run reads: synthetic (uniform, seeded; the offline default), windows
of a text file tokenized with the model's own tokenizer, or sequences saved beside a model (the
sink model's held-out task sequences, which no tokenizer makes).

The tokenizer is the one found at the model's `source` (its size's hub id when `source` is
null), loaded like the weights: offline from a local directory, from the hub (or its cache)
otherwise. The text is tokenized once and cut into consecutive, non-overlapping windows of T
tokens; the first `sequences` windows are used, so the input is the same for every α and format.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from transformer_stability.numerics.items import TokenInputs
from transformer_stability.numerics.spec import GPT2Spec, pretrained_source


class TextInputError(RuntimeError):
    """The text input cannot be built; the message names the config key to change."""


def token_ids(vocab: int, sequences: int, seq_len: int, seed: int) -> torch.Tensor:
    """Synthetic token ids, uniform over the vocabulary (the offline default input)."""
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(vocab, (sequences, seq_len), generator=generator)


def input_ids(spec: GPT2Spec, vocab: int, inputs: TokenInputs, seed: int) -> torch.Tensor:
    """(sequences, T) token ids of a run: saved sequences when `inputs.ids` is set, text
    windows when `inputs.text` is, else synthetic ids."""
    if inputs.ids is not None:
        return saved_ids(Path(inputs.ids), inputs.sequences, inputs.seq_len)
    if inputs.text is None:
        return token_ids(vocab, inputs.sequences, inputs.seq_len, seed)
    ids = _tokenize(spec, Path(inputs.text))
    needed = inputs.sequences * inputs.seq_len
    if ids.numel() < needed:
        raise TextInputError(
            f"config key 'numerics.inputs.text': {inputs.text!r} gives {ids.numel()} tokens, "
            f"fewer than numerics.inputs.sequences × seq_len = {needed}; use a longer text or "
            "fewer or shorter sequences"
        )
    if int(ids.max()) >= vocab:
        raise TextInputError(
            f"config key '{spec.key}.source': its tokenizer yields id {int(ids.max())}, beyond "
            f"the model's vocabulary of {vocab}"
        )
    return ids[:needed].view(inputs.sequences, inputs.seq_len)


def write_ids(ids: torch.Tensor, path: Path) -> None:
    """(sequences, T) token ids to `path`, one sequence per line (read by saved_ids)."""
    np.savetxt(path, ids.numpy(), fmt="%d")


def saved_ids(path: Path, sequences: int, seq_len: int) -> torch.Tensor:
    """The first `sequences` sequences of the file `path` (write_ids), each cut to its first
    `seq_len` tokens; an error where the file holds fewer or shorter ones."""
    ids = np.loadtxt(path, dtype=np.int64, ndmin=2)
    if ids.shape[0] < sequences or ids.shape[1] < seq_len:
        raise TextInputError(
            f"{str(path)!r} holds {ids.shape[0]} sequences of {ids.shape[1]} tokens; the run "
            f"reads {sequences} of {seq_len}"
        )
    return torch.from_numpy(ids[:sequences, :seq_len].copy())


def _tokenize(spec: GPT2Spec, path: Path) -> torch.Tensor:
    from transformers import AutoTokenizer

    source, local = pretrained_source(spec.source, spec.size)
    if not path.is_file():
        raise TextInputError(f"config key 'numerics.inputs.text': no file {str(path)!r}")
    hint = (
        f"config key 'numerics.inputs.text' needs the model's tokenizer, but none was found at "
        f"'{spec.key}.source' = {source!r}"
    )
    remedy = (
        "; save one beside the weights (tokenizer.save_pretrained) or set "
        "numerics.inputs.text: null for synthetic tokens"
    )
    try:
        tokenizer = AutoTokenizer.from_pretrained(
            str(local) if local is not None else source, local_files_only=local is not None
        )
    except (OSError, ValueError) as error:
        reason = f" ({type(error).__name__}: {str(error).splitlines()[0]})"
        raise TextInputError(hint + reason + remedy) from None
    if len(tokenizer) <= 1:  # a directory without tokenizer files loads as an empty vocabulary
        raise TextInputError(hint + " (it has no vocabulary)" + remedy)
    text = path.read_text(encoding="utf-8")
    return torch.tensor(tokenizer(text)["input_ids"], dtype=torch.long)
