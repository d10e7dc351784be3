"""Explicit parameters that count exactly on the whole (c, m) grid, one family per placement.

Each construction fixes the geometry the theory prescribes (which score ratio alpha, which line
the output direction moves on), solves a small LP for the read-out on the exact constraints, and
is then checked by the real forward pass on every grid point (`verify`). Its largest vector norm
is an upper bound on B_min(L).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from scipy.optimize import brentq, minimize_scalar

from transformer_stability.counting.grid import extreme_points, torch_grid
from transformer_stability.counting.model import (
    ModelSpec,
    Params,
    grid_forward,
    grid_representation,
    pre_map,
)
from transformer_stability.counting.theory import (
    HALF,
    _arc_directions,
    affine_band_lp,
    arc_readout_lp,
    minimal_gain,
    optimal_arc,
    saturation,
)

DTYPE = torch.float64


@dataclass(frozen=True)
class Construction:
    spec: ModelSpec
    params: Params

    @property
    def max_norm(self) -> float:
        return float(self.params.max_vector_norm()[0])


def mean_zero_frame(d: int) -> tuple[np.ndarray, np.ndarray]:
    """Orthonormal mean-zero g1 = (e1 - e2)/sqrt2, g2 = (e3 - e4)/sqrt2: LayerNorm fixes them
    (up to sqrt(d)) and their disjoint supports let an elementwise gain treat them apart."""
    if d < 4:
        raise ValueError("the constructions need d >= 4")
    eye = np.eye(d)
    return (eye[0] - eye[1]) / math.sqrt(2), (eye[2] - eye[3]) / math.sqrt(2)


def axis_frame(d: int) -> tuple[np.ndarray, np.ndarray]:
    """Orthonormal mean-zero g1 = P e_1 / |P e_1| (the mean-zero direction closest to one
    axis, so u ⊙ gamma = k e_1 reads it with gain k sqrt((d-1)/d)) and g2 ⊥ g1."""
    eye = np.eye(d)
    p1 = eye[0] - 1.0 / d
    g1 = p1 / np.linalg.norm(p1)
    p2 = eye[1] - 1.0 / d
    p2 = p2 - (p2 @ g1) * g1
    return g1, p2 / np.linalg.norm(p2)


def _params(**vectors: np.ndarray | float | None) -> Params:
    """Params with one run (R = 1) in float64 from numpy vectors."""

    def as_tensor(v):
        return None if v is None else torch.as_tensor(np.atleast_1d(v), dtype=DTYPE)[None]

    return Params(**{k: as_tensor(v) for k, v in vectors.items()})


def _band_on_extremes(alpha: float, beta: float, length: int, half: float):
    """(b0, D) for y = b0 + D t(c, m): t is monotone in m, so m = 0 and m = L - c suffice."""
    c, m = extreme_points(length)
    return affine_band_lp(saturation(alpha, c, m, beta), c.astype(float), half)


def _none_regression(spec: ModelSpec, half: float) -> Params | None:
    """e_Q = q e1, e_a = x e1 + y e2 (score ratio alpha), e_b = -r e1 (b tokens drowned),
    u = U e2 so only a tokens carry value: y = b0 + D t(c, m) with D = U y."""
    d, tau, length = spec.d, spec.tau, spec.length
    alpha = minimal_gain(length, half=half).alpha
    q = math.sqrt(tau * math.log(1 / alpha)) if alpha < 1 else 1.0
    x = q + tau * math.log(alpha) / q
    r = q
    for _ in range(3):  # a longer e_b only shrinks beta; grow it up to the bound itself
        found = _band_on_extremes(alpha, math.exp(-q * (r + q) / tau), length, half)
        if found is None:
            return None
        b0, gain = found
        y = math.sqrt(gain)
        r = max(q, math.hypot(x, y), y, abs(b0))
    e = np.eye(d)
    return _params(e_q=q * e[0], e_a=x * e[0] + y * e[1], e_b=-r * e[0], u=y * e[1], b0=b0)


def _linear_regression(spec: ModelSpec) -> Params:
    """Linear attention: y = <u, e_Q>(1 + s_Q) + b0 + c s_a <u, e_a> (e_b = 0 drops m). With
    |e_Q| = |u| = B at angles 0 and phi and e_a on the bisector, scaled so the slope is exactly
    1, b0 cancels the constant; bisect for the smallest B with |b0| <= B."""
    d, tau = spec.d, spec.tau
    e = np.eye(d)

    def design(b: float) -> dict[str, np.ndarray | float]:
        phi = min(2 * math.acos(min(1.0, math.sqrt(tau) / b**2)), math.pi / 2)
        e_q, u = b * e[0], b * (math.cos(phi) * e[0] + math.sin(phi) * e[1])
        e_a = b * (math.cos(phi / 2) * e[0] + math.sin(phi / 2) * e[1])
        e_a = e_a * math.sqrt(tau / ((e_q @ e_a) * (u @ e_a)))  # slope s_a <u, e_a> = 1
        b0 = -(u @ e_q) * (1 + (e_q @ e_q) / tau)
        return {"e_q": e_q, "e_a": e_a, "e_b": np.zeros(d), "u": u, "b0": b0}

    lo, hi = tau**0.25, 4 * tau**0.25
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if abs(design(mid)["b0"]) <= mid else (mid, hi)
    return _params(**design(hi))


def _scan_alpha(log_alpha_range: tuple[float, float], cost) -> tuple | None:
    """Minimize cost(alpha) -> (B, design) over log alpha: grid scan, then Brent."""
    lo, hi = log_alpha_range
    xs = np.linspace(lo, hi, 80)
    vals = [cost(math.exp(x))[0] for x in xs]
    if not np.isfinite(vals).any():
        return None
    i = int(np.argmin(vals))
    res = minimize_scalar(
        lambda x: min(cost(math.exp(x))[0], 1e300),
        bounds=(xs[max(i - 1, 0)], xs[min(i + 1, len(xs) - 1)]),
        method="bounded",
    )
    return cost(math.exp(res.x if res.fun <= vals[i] else xs[i]))[1]


def _pre_bare_regression(spec: ModelSpec, half: float) -> Params | None:
    """N(e_Q) = sqrt(d) g1, N(e_a) at angle theta (score ratio alpha >= e^{-S}), N(e_b) =
    -N(e_Q) (smallest b weight e^{-S}), u = U g2: y = b0 + D t(c, m), D = U sqrt(d) sin theta."""
    d, tau, length = spec.d, spec.tau, spec.length
    g1, g2 = mean_zero_frame(d)

    def cost(alpha: float):
        found = _band_on_extremes(alpha, math.exp(-2 * d / tau), length, half)
        if found is None:
            return math.inf, None
        b0, gain = found
        theta = math.acos(1 + tau * math.log(alpha) / d)
        u_norm = gain / (math.sqrt(d) * math.sin(theta))
        return max(u_norm, abs(b0), 1.0), (theta, u_norm, b0)

    found = _scan_alpha((-2 * d / tau + 1e-9, -1e-3), cost)
    if found is None:
        return None
    theta, u_norm, b0 = found
    e_a = math.cos(theta) * g1 + math.sin(theta) * g2
    return _params(e_q=g1, e_a=e_a, e_b=-g1, u=u_norm * g2, b0=b0)


def _pre_learned_regression(spec: ModelSpec, half: float) -> Params | None:
    """e_Q = g1, e_a = g2, e_b = -g1 and a gain gamma_s on g1's support (sets the score ratio
    alpha = exp(-d gamma_s^2 / tau), beta = alpha^2) and gamma_v on g2's (amplifies the value
    of a tokens, D = U sqrt(d) gamma_v): the gain pays for the read-out without touching
    the scores."""
    d, tau, length = spec.d, spec.tau, spec.length
    g1, g2 = mean_zero_frame(d)
    on1, on2 = np.abs(g1) > 0, np.abs(g2) > 0

    def cost(alpha: float):
        gamma_s = math.sqrt(tau * math.log(1 / alpha) / d)
        found = _band_on_extremes(alpha, alpha**2, length, half)
        if found is None:
            return math.inf, None
        b0, gain = found

        def norms(gamma_v: float) -> tuple[float, float]:
            return math.sqrt(2 * gamma_s**2 + 2 * gamma_v**2), gain / (math.sqrt(d) * gamma_v)

        res = minimize_scalar(
            lambda g: max(norms(g)), bounds=(1e-6, 10 * math.sqrt(gain) + 10), method="bounded"
        )
        gamma_v = float(res.x)
        return max(*norms(gamma_v), abs(b0), 1.0), (gamma_s, gamma_v, norms(gamma_v)[1], b0)

    found = _scan_alpha((math.log(0.02 / length**2), -1e-3), cost)
    if found is None:
        return None
    gamma_s, gamma_v, u_norm, b0 = found
    gamma = gamma_s * on1 + gamma_v * on2
    return _params(e_q=g1, e_a=g2, e_b=-g1, u=u_norm * g2, b0=b0, gamma=gamma, beta=np.zeros(d))


def _solve_offset(q: float, target: float, tau: float) -> float | None:
    """x with exp(q (x - q) / tau) (q + x) = target: the e_Q-component of e_a that puts the
    step rho (e_Q + e_a) of the output line where the geometry wants it (monotone branch)."""

    def f(x: float) -> float:
        return math.exp(q * (x - q) / tau) * (q + x) - target

    if target <= 0:
        lo = -q - tau / q  # f is decreasing on [lo, -q], from its minimum to 0
        return None if f(lo) > 0 else brentq(f, lo, -q, xtol=1e-15, rtol=1e-15)
    hi = 1.0
    while f(-q + hi) < 0:
        hi *= 2
    return brentq(f, -q, -q + hi, xtol=1e-15, rtol=1e-15)


def _post_regression(spec: ModelSpec, half: float) -> Params:
    """e_b = -e_Q makes the output direction that of 2 e_Q + c rho (e_Q + e_a), an affine line
    in c independent of m. Place the line at the LP-optimal foot and distance (a flat arc,
    e_a close to -e_Q), then solve the read-out LP on the realized directions."""
    d, tau, length = spec.d, spec.tau, spec.length
    learned = spec.placement == "post_learned"
    scale = math.sqrt(d - 1) if learned else math.sqrt(d)
    # geometry from a slightly narrower band: its optimum sits on the edge of feasibility
    arc = optimal_arc(length, scale, bias_bounded=not learned, half=half - 0.01)
    q, x = 1.0, None
    while x is None:  # a shorter e_Q reaches any line; halve q until the offset is solvable
        step = 2 * q / math.hypot(arc.foot, arc.distance)
        cos_w, sin_w = -arc.foot * step / (2 * q), arc.distance * step / (2 * q)
        x = _solve_offset(q, step * cos_w, tau)
        q = q if x is not None else q / 2
    rho = math.exp(q * (x - q) / tau)
    y = step * sin_w / rho
    line = np.array([2 * q, 0.0])[None] + np.arange(length + 1)[:, None] * rho * np.array(
        [q + x, y]
    )
    directions = line / np.linalg.norm(line, axis=1, keepdims=True)
    _, gain, bias = arc_readout_lp(directions, scale, bias_bounded=not learned, half=half)
    g1, g2 = axis_frame(d)
    if not learned:
        h1, h2 = g1, g2
        return _params(
            e_q=q * h1,
            e_a=x * h1 + y * h2,
            e_b=-q * h1,
            u=(gain[0] * h1 + gain[1] * h2) / math.sqrt(d),
            b0=bias,
        )
    # learned gain: u = gamma = sqrt(k) e_1 and a frame in which U points along g1 = P e_1/|P e_1|
    a, b = gain / np.linalg.norm(gain)
    h1, h2 = a * g1 - b * g2, b * g1 + a * g2
    k = np.linalg.norm(gain) / math.sqrt(d - 1)
    root = math.sqrt(k)
    b0 = bias / (1 + root)
    e1 = np.eye(d)[0]
    return _params(
        e_q=q * h1,
        e_a=x * h1 + y * h2,
        e_b=-q * h1,
        u=root * e1,
        b0=b0,
        gamma=root * e1,
        beta=(bias - b0) / root * e1,
    )


def _classification(spec: ModelSpec) -> Params:
    """Unit embeddings e_Q = g1, e_a = g2, e_b = -g1 (learned norms: gamma = 1/sqrt(d), beta = 0).
    No norm / post-norm: the output at (c, m) is a positive multiple of its value at (c, 0), so
    the head w_k = direction of the output at (k, 0) (nearest direction) is exact. Pre-norm:
    the output is a barycentre of phi_Q, phi_a, phi_b; rows with T_kb = 0, T_kQ = -k^2 and
    T_ka = 2k / rho make the logits proportional to c^2 - (k - c)^2 for every m."""
    d, length = spec.d, spec.length
    g1, g2 = mean_zero_frame(d)
    learned = {"gamma": np.full(d, 1 / math.sqrt(d)), "beta": np.zeros(d)} if spec.learned else {}
    base = _params(e_q=g1, e_a=g2, e_b=-g1, **learned)
    k = np.arange(length + 1, dtype=float)
    if not spec.pre:
        c = torch.arange(length + 1)
        rep = grid_representation(spec, base, c, torch.zeros_like(c))[0].numpy()
        rows = np.c_[rep / np.linalg.norm(rep, axis=1, keepdims=True), np.zeros(length + 1)]
    else:
        phi = pre_map(spec, base, torch.stack([base.e_q, base.e_a, base.e_b], 1))[0].numpy()
        scores = phi @ phi[0] / spec.tau
        rho = math.exp(scores[1] - scores[0])
        system = np.c_[phi + g1[None], np.ones(3)]  # rows: Q, a, b
        targets = np.stack([-(k**2), 2 * k / rho, np.zeros_like(k)])  # (3, L+1)
        rows = np.linalg.lstsq(system, targets, rcond=None)[0].T  # min-norm (L+1, d+1)
        rows /= np.linalg.norm(rows, axis=1).max()
    return Params(
        **base.tensors(),
        head_w=torch.as_tensor(rows[:, :d], dtype=DTYPE)[None],
        head_b=torch.as_tensor(rows[:, d], dtype=DTYPE)[None],
    )


def construct(spec: ModelSpec, margin: float = 0.02) -> Construction | None:
    """The placement's construction at spec.length, or None where none exists (pre-norm past
    its wall)."""
    half = HALF - margin
    if spec.readout == "classification":
        params = _classification(spec)
    elif spec.attention == "linear":
        if spec.placement != "none":
            raise ValueError("the linear-attention construction is for placement 'none'")
        params = _linear_regression(spec)
    elif spec.placement == "none":
        params = _none_regression(spec, half)
    elif spec.placement == "pre_bare":
        params = _pre_bare_regression(spec, half)
    elif spec.placement == "pre_learned":
        params = _pre_learned_regression(spec, half)
    else:
        params = _post_regression(spec, half)
    return None if params is None else Construction(spec, params)


def grid_errors(construction: Construction, chunk: int = 1 << 18) -> tuple[float, bool]:
    """Max |y - c| (regression) or 0/1 (classification) over the whole grid, and whether every
    grid point is counted exactly; evaluated in chunks by the multiplicity forward pass."""
    spec, params = construction.spec, construction.params
    c_all, m_all = torch_grid(spec.length)
    worst, exact = 0.0, True
    classes = max(1, chunk // max(spec.n_classes, 1)) if spec.readout == "classification" else chunk
    with torch.no_grad():
        for start in range(0, len(c_all), classes):
            c, m = c_all[start : start + classes], m_all[start : start + classes]
            out = grid_forward(spec, params, c, m)[0]
            if spec.readout == "regression":
                err = (out - c.to(out.dtype)).abs()
                worst = max(worst, float(err.max()))
                exact &= bool((err < HALF).all())
            else:
                wrong = out.argmax(-1) != c
                worst = max(worst, float(wrong.any()))
                exact &= not bool(wrong.any())
    return worst, exact


def line_directions(length: int, foot: float, distance: float) -> np.ndarray:
    """Public alias of the arc parametrization used by the LPs (for plotting and tests)."""
    return _arc_directions(length, foot, distance)
