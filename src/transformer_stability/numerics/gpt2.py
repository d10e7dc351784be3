"""GPT-2 from Hugging Face `transformers`, and a forward pass that exposes every residual add.

The model is an ordinary `GPT2LMHeadModel` (eager attention); `residual_stream` re-runs its
blocks with the weights held in a test format (`Precision`), the residual branches scaled by α,
and yields the stream after each of the 2L residual adds. With float64 and α = 1 it reproduces
the Hugging Face forward (tested to 1e-10 on the logits).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace

import torch
import torch.nn.functional as F
from transformers import GPT2Config, GPT2LMHeadModel

from transformer_stability.numerics.rounding import Arithmetic
from transformer_stability.numerics.spec import GPT2Spec, pretrained_source


class ModelSourceError(RuntimeError):
    """Pretrained weights could not be loaded; the message names the config key to change."""


def random_gpt2(spec: GPT2Spec, generator: torch.Generator) -> GPT2LMHeadModel:
    """A GPT-2 with the initialization of docs/numerics.md (needs no download).

    Residual output projections (both c_proj) ~ N(0, 1/(d_in·2L)); every other linear layer and
    the tied token embedding ~ N(0, 1/d_in); position embedding N(0, 0.02²); biases 0, LN γ=1, β=0.
    """
    layers, width, heads = spec.shape()
    config = GPT2Config(
        n_layer=layers,
        n_embd=width,
        n_head=heads,
        vocab_size=spec.vocab,
        n_positions=spec.positions,
        bos_token_id=spec.vocab - 1,
        eos_token_id=spec.vocab - 1,
        attn_implementation="eager",
    )
    model = GPT2LMHeadModel(config).eval()
    with torch.no_grad():
        for name, param in model.named_parameters():
            param.copy_(_init_value(name, param, width, layers, generator))
    return model


def _init_value(
    name: str, param: torch.Tensor, width: int, layers: int, generator: torch.Generator
) -> torch.Tensor:
    if name.endswith(".bias") or ".ln_" in name or name.startswith("transformer.ln_f"):
        return torch.ones_like(param) if name.endswith(".weight") else torch.zeros_like(param)
    if name == "transformer.wpe.weight":
        return 0.02 * torch.randn(param.shape, generator=generator)
    d_in = width if name == "transformer.wte.weight" else param.shape[0]  # Conv1D: (in, out)
    variance = 1.0 / d_in
    if name.endswith("c_proj.weight"):
        variance /= 2 * layers
    return math.sqrt(variance) * torch.randn(param.shape, generator=generator)


def pretrained_gpt2(spec: GPT2Spec) -> GPT2LMHeadModel:
    """`from_pretrained` from a local directory (offline) or a hub id, with one clear error."""
    source, local = pretrained_source(spec.source, spec.size)
    looks_local = local is not None
    offline_hint = (
        f"set '{spec.key}.source' to a local directory written by save_pretrained, "
        f"or use '{spec.key}.weights: random', which needs no download"
    )
    if looks_local and not local.is_dir():
        raise ModelSourceError(
            f"config key '{spec.key}.source': local directory {source!r} does not exist; "
            + offline_hint
        )
    try:
        model = GPT2LMHeadModel.from_pretrained(
            str(local) if looks_local else source,
            attn_implementation="eager",
            local_files_only=looks_local,
            dtype=torch.float32,
        )
    except OSError as error:
        where = "the local directory" if looks_local else "the Hugging Face hub"
        raise ModelSourceError(
            f"config key '{spec.key}.source': could not load {source!r} from {where} "
            f"({type(error).__name__}: {str(error).splitlines()[0]}); " + offline_hint
        ) from None
    return model.eval()


def build_gpt2(spec: GPT2Spec, generator: torch.Generator) -> GPT2LMHeadModel:
    if spec.weights == "random":
        return random_gpt2(spec, generator)
    return pretrained_gpt2(spec)


def embed(model: GPT2LMHeadModel, ids: torch.Tensor) -> torch.Tensor:
    """Token + position embedding of ids (batch, T), in the model's own dtype."""
    positions = torch.arange(ids.shape[1], device=ids.device)
    return model.transformer.wte(ids) + model.transformer.wpe(positions)


@dataclass(frozen=True)
class ResidualAdd:
    """The residual stream after one residual add, and the sublayer input that produced it."""

    index: int  # 1 .. 2L
    block: int
    kind: str  # 'attn' or 'mlp'
    stream: torch.Tensor  # (batch, T, d) after the add
    normed: torch.Tensor  # (batch, T, d) LayerNorm output fed to the sublayer


@dataclass(frozen=True)
class BlockWeights:
    """One block's parameters in a storage format, the residual projections scaled by α.

    Tensors are (weight, bias) pairs in GPT-2's Conv1D layout (in, out); LayerNorms are
    (gain, bias). `cast` hands the same stored numbers to the float64 reference.
    """

    ln_1: tuple[torch.Tensor, torch.Tensor]
    ln_2: tuple[torch.Tensor, torch.Tensor]
    qkv: tuple[torch.Tensor, torch.Tensor]
    attn_proj: tuple[torch.Tensor, torch.Tensor]
    fc: tuple[torch.Tensor, torch.Tensor]
    mlp_proj: tuple[torch.Tensor, torch.Tensor]
    heads: int
    scale: float
    eps: float
    act: torch.nn.Module

    _PAIRS = ("ln_1", "ln_2", "qkv", "attn_proj", "fc", "mlp_proj")

    @classmethod
    def from_block(
        cls, block, precision: Arithmetic, alpha: float, device: torch.device
    ) -> BlockWeights:
        def pair(module, scale: float = 1.0) -> tuple[torch.Tensor, torch.Tensor]:
            # scale in the checkpoint's own dtype, then store; the reference upcasts these
            return tuple(
                precision.store((p.detach() * scale).to(device))
                for p in (module.weight, module.bias)
            )

        attn, mlp = block.attn, block.mlp
        return cls(
            ln_1=pair(block.ln_1),
            ln_2=pair(block.ln_2),
            qkv=pair(attn.c_attn),
            attn_proj=pair(attn.c_proj, alpha),
            fc=pair(mlp.c_fc),
            mlp_proj=pair(mlp.c_proj, alpha),
            heads=attn.num_heads,
            scale=attn.head_dim**-0.5 if attn.scale_attn_weights else 1.0,
            eps=block.ln_1.eps,
            act=mlp.act,
        )

    def cast(self, precision: Arithmetic) -> BlockWeights:
        """The same stored numbers in another storage format (exact when widening)."""
        return replace(
            self,
            **{
                name: tuple(precision.store(t) for t in getattr(self, name)) for name in self._PAIRS
            },
        )


class LazyBlocks(Sequence[BlockWeights]):
    """A model's blocks as copies made when asked for, only the last one kept: the residual
    streams of a group walk the blocks in step, so a deep model's stored and reference copies
    are never all in memory at once (GPT-2 XL: 6 GB in float32, 12 GB in float64)."""

    def __init__(self, count: int, make: Callable[[int], BlockWeights]) -> None:
        self._count, self._make = count, make
        self._held: tuple[int, BlockWeights | None] = (-1, None)

    def __len__(self) -> int:
        return self._count

    def __getitem__(self, block: int) -> BlockWeights:  # type: ignore[override]
        if not 0 <= block < self._count:
            raise IndexError(f"block {block} of {self._count}")
        if self._held[0] != block:
            self._held = (-1, None)  # free the copy held before making the next
            self._held = (block, self._make(block))
        return self._held[1]

    def cast(self, precision: Arithmetic) -> LazyBlocks:
        """The same stored numbers in another storage format, block by block."""
        return LazyBlocks(self._count, lambda block: self[block].cast(precision))


def stored_blocks(
    model: GPT2LMHeadModel, precision: Arithmetic, alpha: float, device: torch.device
) -> LazyBlocks:
    """Every block's parameters in `precision`'s storage format, α applied, on `device`."""
    _check_supported(model.config)
    layers = model.transformer.h
    return LazyBlocks(
        len(layers), lambda b: BlockWeights.from_block(layers[b], precision, alpha, device)
    )


def _check_supported(config: GPT2Config) -> None:
    if config.scale_attn_by_inverse_layer_idx or config.reorder_and_upcast_attn:
        raise ValueError(
            "GPT-2 configs with scale_attn_by_inverse_layer_idx or reorder_and_upcast_attn "
            "are not supported by the residual-stream forward"
        )


def _layer_norm(x: torch.Tensor, params: tuple, eps: float) -> torch.Tensor:
    return F.layer_norm(x, x.shape[-1:], *params, eps)


def _attention(x: torch.Tensor, w: BlockWeights, precision: Arithmetic) -> torch.Tensor:
    """Causal multi-head attention, as GPT-2's eager implementation computes it."""
    batch, length, width = x.shape
    q, k, v = precision.linear(x, *w.qkv, "qkv").split(width, dim=-1)
    q, k, v = (t.view(batch, length, w.heads, -1).transpose(1, 2) for t in (q, k, v))
    scores = precision.matmul(q, k.transpose(-1, -2), "scores") * w.scale
    causal = torch.ones(length, length, dtype=torch.bool, device=x.device).tril()
    probs = precision.output("softmax", torch.softmax(scores.masked_fill(~causal, -math.inf), -1))
    out = precision.matmul(probs, v, "mix").transpose(1, 2).reshape(batch, length, width)
    return precision.linear(out, *w.attn_proj, "attn_proj")


def _mlp(x: torch.Tensor, w: BlockWeights, precision: Arithmetic) -> torch.Tensor:
    hidden = precision.output("gelu", w.act(precision.linear(x, *w.fc, "fc")))
    return precision.linear(hidden, *w.mlp_proj, "mlp_proj")


def branch(kind: str, x: torch.Tensor, w: BlockWeights, precision: Arithmetic) -> torch.Tensor:
    """The sublayer of an add of `kind` ('attn' or 'mlp') on its LayerNorm output `x`."""
    return (_attention if kind == "attn" else _mlp)(x, w, precision)


def _normed(h: torch.Tensor, params: tuple, eps: float, precision: Arithmetic) -> torch.Tensor:
    return precision.output("layernorm", _layer_norm(h, params, eps))


def residual_stream(
    blocks: Sequence[BlockWeights], h: torch.Tensor, precision: Arithmetic
) -> Iterator[ResidualAdd]:
    """Run the blocks on the embedded input `h` and yield the stream after every residual add."""
    h = precision.store(h)
    for b, w in enumerate(blocks):
        normed = _normed(h, w.ln_1, w.eps, precision)
        h = precision.output("add", h + branch("attn", normed, w, precision))
        yield ResidualAdd(2 * b + 1, b, "attn", h, normed)
        normed = _normed(h, w.ln_2, w.eps, precision)
        h = precision.output("add", h + branch("mlp", normed, w, precision))
        yield ResidualAdd(2 * b + 2, b, "mlp", h, normed)


def logits(model: GPT2LMHeadModel, h: torch.Tensor) -> torch.Tensor:
    """Final LayerNorm and the tied LM head, in h's dtype."""
    ln_f = model.transformer.ln_f
    weight = model.lm_head.weight.to(h)
    return F.layer_norm(h, h.shape[-1:], ln_f.weight.to(h), ln_f.bias.to(h), ln_f.eps) @ weight.T
