"""How much of each rounding source reaches its branch's output, token by token: the typical
recursion's per-source terms (recursion.typical_step).

A rounding source j perturbs every value x it outputs by a relative error of root mean square
r_j (recursion.typical_step: its roundoff ε_j times the rounding's own root mean square per unit
roundoff). Modelled as r_j·ξ ⊙ x with ξ of zero mean and unit variance, independent per entry,
the branch output moves, to first order, by r_j·J_j(ξ ⊙ x), where J_j is the Jacobian of the
rest of the branch at that source. Its size G_j = ‖J_j(ξ ⊙ x)‖₂ (one draw of ξ per token,
uniform on [−√3, √3]) is what this module finds: the float64 reference
branch is run once more with only that source's outputs multiplied by (1 + ηξ), and the change
of the output divided by η. So each source is weighed by what it rounds (scores, softmax
weights, P·V, projections, the MLP's hidden values, LayerNorm's output) and by how the rest of
the branch carries it: a score error passes the softmax's Jacobian and the values, an output
projection's error reaches the output as it is. The ξ are drawn on the CPU from a seeded
generator, so every device gets the same draws.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from transformer_stability.numerics.gpt2 import BlockWeights, branch
from transformer_stability.numerics.rounding import Float64Operations, Precision

ETA = 2.0**-26
"""The perturbation's relative step: first-order terms dominate (second order ~η ≈ 1.5e-8
relative), while float64 rounding of the two branch evaluations stays ~1e-16/η ≈ 1e-8 of it."""

BRANCH_SOURCES = {
    "attn": ("layernorm", "qkv", "scores", "softmax", "mix", "attn_proj"),
    "mlp": ("layernorm", "fc", "gelu", "mlp_proj"),
}
"""The rounding sources inside each kind of branch, LayerNorm's output (its input) first."""

_REFERENCE = Precision.parse("fp64")


def relative_noise(x: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """ξ ⊙ x, ξ uniform on [−√3, √3] per entry (unit variance), drawn on the CPU in float64."""
    xi = torch.rand(x.shape, generator=generator, dtype=torch.float64).sub_(0.5)
    return xi.mul_(2 * math.sqrt(3)).to(x.device) * x.to(torch.float64)


@dataclass(frozen=True)
class SourcePerturbation(Float64Operations):
    """Float64 arithmetic whose operations of type `source` have their outputs perturbed by a
    relative `eta`·ξ (ξ as in `relative_noise`)."""

    source: str
    generator: torch.Generator
    eta: float = ETA

    def output(self, source: str, x: torch.Tensor) -> torch.Tensor:
        x = x.to(torch.float64)
        return x + self.eta * relative_noise(x, self.generator) if source == self.source else x


def source_gains(
    kind: str,
    normed: torch.Tensor,
    block: BlockWeights,
    generator: torch.Generator,
    eta: float = ETA,
) -> dict[str, torch.Tensor]:
    """G_j per token, shape normed.shape[:-1], for every source j of the branch `kind` on its
    float64 LayerNorm output `normed`: the branch output's change, 2-norm, per unit root mean
    square of relative perturbation of that source's outputs."""
    base = branch(kind, normed, block, _REFERENCE)
    gains = {}
    for source in BRANCH_SOURCES[kind]:
        perturbed = SourcePerturbation(source, generator, eta)
        # the branch's input is LayerNorm's output: perturbed there when the source is LayerNorm
        out = branch(kind, perturbed.output("layernorm", normed), block, perturbed)
        gains[source] = (out - base).norm(dim=-1) / eta
    return gains
