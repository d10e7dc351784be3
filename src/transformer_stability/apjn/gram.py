"""The full-Gram closure: the mean-field recursion run on each input's whole token Gram matrix.

The (q, p) closure replaces every token pair by the mean variance and covariance. On natural
images pair correlations and variances vary widely (the CLS token's variance is tiny), and the
kernels are nonlinear, so the closure is biased (Jensen). Here the N_tot x N_tot Gram matrix K
(CLS included) goes through the same kernels pair by pair:
    attention  K <- K + a mean(Phi(K)) 11^T
    MLP        K_ij <- K_ij + m sqrt(u_i u_j) kappa(U_ij / sqrt(u_i u_j)),  U = Phi(K), u = diag U
and the APJN through the pair Gram G of perturbations (forward) or cotangents (backward), with
X_ij = E phi'(z_i) phi'(z_j) the pair susceptibility:
    forward   attention G <- G + a mean(X * G) 11^T;  backward  G <- G + a mean(G) X
    MLP       G_ij <- G_ij (1 + m kappa'(rho_ij) X^h_ij), kappa'(1) = 1/2 on the diagonal.
J = trace(G) / N_tot. With equal statistics on every token this is the (q, p) recursion with the
attention self-term. LayerNorm and erf only (tanh has no closed pair kernel at unequal
variances). Derivation: docs/apjn.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from transformer_stability.apjn.names import NormName
from transformer_stability.apjn.theory import MeanField

GRAM_NORMS: tuple[NormName, ...] = ("ln", "derf")


def _relu_kappa(rho: np.ndarray) -> np.ndarray:
    rho = np.clip(rho, -1.0, 1.0)
    return (np.sqrt(1 - rho**2) + rho * (math.pi - np.arccos(rho))) / (2 * math.pi)


def _relu_kappa_prime(rho: np.ndarray) -> np.ndarray:
    return 0.25 + np.arcsin(np.clip(rho, -1.0, 1.0)) / (2 * math.pi)


def pair_kernels(norm: NormName, alpha: float | None, k: np.ndarray) -> tuple[np.ndarray, ...]:
    """(Phi, X): E phi(z_i) phi(z_j) and E phi'(z_i) phi'(z_j) for every token pair of Gram K."""
    diag = np.diag(k)
    if norm == "ln":
        scale = 1.0 / np.sqrt(np.outer(diag, diag))
        return k * scale, scale
    if norm == "derf":
        a2 = alpha**2
        spread = 1.0 + 2.0 * a2 * diag
        # |2 a2 K_ij| <= 2 a2 sqrt(K_ii K_jj) < sqrt(spread_i spread_j) on a PSD Gram: no clip
        phi = (2 / math.pi) * np.arcsin(2 * a2 * k / np.sqrt(np.outer(spread, spread)))
        chi = (4 * a2 / math.pi) / np.sqrt(np.outer(spread, spread) - 4 * a2**2 * k**2)
        return phi, chi
    raise ValueError(f"the full-Gram closure is for {GRAM_NORMS}, not {norm!r}")


@dataclass(frozen=True)
class GramTrajectory:
    """Gram matrices at every block input (L+1, n, n) and the per-block pair susceptibilities
    at the block input (attention) and mid-block (MLP, with kappa' folded in), (L, n, n)."""

    gram: np.ndarray
    chi: np.ndarray
    mlp_gain: np.ndarray  # kappa'(rho_ij) X^h_ij, with 1/2 on the diagonal

    @property
    def depth(self) -> int:
        return len(self.chi)


def propagate_gram(
    norm: NormName, alpha: float | None, mf: MeanField, gram0: np.ndarray, depth: int
) -> GramTrajectory:
    """Iterate the full-Gram recursion for `depth` blocks from the Gram matrix gram0."""
    n = len(gram0)
    grams, chis, gains = [np.asarray(gram0, dtype=float)], [], []
    eye = np.eye(n, dtype=bool)
    for _ in range(depth):
        k = grams[-1]
        phi, chi = pair_kernels(norm, alpha, k)
        k_h = k + mf.a * phi.mean()
        u_mat, chi_h = pair_kernels(norm, alpha, k_h)
        u = np.diag(u_mat)
        root = np.sqrt(np.outer(u, u))
        rho = u_mat / root
        grams.append(k_h + mf.m * root * _relu_kappa(rho))
        chis.append(chi)
        gains.append(np.where(eye, 0.5, _relu_kappa_prime(rho)) * chi_h)
    return GramTrajectory(np.array(grams), np.array(chis), np.array(gains))


def gram_forward_log_apjn(traj: GramTrajectory, mf: MeanField) -> np.ndarray:
    """ln J^{b,0} for b = 0..L (G = I at the source), renormalized every block."""
    n = traj.gram.shape[1]
    g, log_scale, out = np.eye(n), 0.0, np.zeros(traj.depth + 1)
    for layer in range(traj.depth):
        g = g + mf.a * (traj.chi[layer] * g).mean()
        g = g * (1 + mf.m * traj.mlp_gain[layer])
        j = np.trace(g) / n
        log_scale += math.log(j)
        g /= j
        out[layer + 1] = log_scale
    return out


def gram_backward_log_apjn(traj: GramTrajectory, mf: MeanField) -> np.ndarray:
    """ln J^{L,b} for b = 0..L (G = I at block L), iterating from the last block down."""
    n = traj.gram.shape[1]
    g, log_scale, out = np.eye(n), 0.0, np.zeros(traj.depth + 1)
    for layer in reversed(range(traj.depth)):
        g = g * (1 + mf.m * traj.mlp_gain[layer])
        g = g + mf.a * g.mean() * traj.chi[layer]
        j = np.trace(g) / n
        log_scale += math.log(j)
        g /= j
        out[layer] = log_scale
    return out


def token_moments(gram: np.ndarray, skip: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """(q, p) of Gram matrices (..., n, n) over the tokens after the first `skip` (CLS)."""
    k = gram[..., skip:, skip:]
    n = k.shape[-1]
    q = np.trace(k, axis1=-2, axis2=-1) / n
    p = (k.sum(axis=(-2, -1)) - n * q) / (n * (n - 1))
    return q, p
