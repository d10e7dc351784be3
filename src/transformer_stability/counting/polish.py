"""Minimax polish of trained regression runs: after projected Adam, each constrained run's
largest error on the grid, max_g |y_g - c_g| (the exactness criterion itself), is minimised in
float64 by SLSQP with every trainable vector held to its ball |v| <= B.

Why: Adam on a smooth surrogate (the annealed p-mean) stalls short of exactness near the lower
bound, where the feasible set is thin; the largest error is a minimax objective, which SLSQP on
(theta, t) — minimise t subject to |y_g - c_g| <= t — handles with exact Jacobians. A minimax
fit's active points are few (an output monotone in m at fixed c peaks on the grid's edges), so
each solve uses a working set: the edges first, then every grid point whose error exceeds the
working set's largest, for a few rounds. A run keeps its best parameters: a polish never makes
a run worse on the whole grid.
"""

from __future__ import annotations

import numpy as np
import torch
from scipy.optimize import minimize

from transformer_stability.counting.grid import extreme_points, grid_points
from transformer_stability.counting.model import ModelSpec, Params, grid_forward

ROUNDS = 4  # working-set rounds; a round adds at most ADDED points
ADDED = 32


def polish_runs(spec: ModelSpec, params: Params, bounds: torch.Tensor, iterations: int) -> Params:
    """`params` with every regression run of finite bound polished (`iterations` SLSQP steps per
    solve); runs of infinite bound are returned as they are."""
    if spec.readout != "regression":
        raise ValueError(f"the polish minimises a regression's largest error, not {spec.readout}'s")
    runs = []
    for run, bound in enumerate(bounds.tolist()):
        one = params.map(lambda t, r=run: t[r : r + 1].double())
        runs.append(polish_run(spec, one, bound, iterations) if np.isfinite(bound) else one)
    dtype, device = params.e_q.dtype, params.e_q.device
    return Params(
        **{k: torch.cat([getattr(r, k) for r in runs]).to(device, dtype) for k in params.tensors()}
    )


def polish_run(spec: ModelSpec, params: Params, bound: float, iterations: int) -> Params:
    """One run (a leading run axis of 1) polished: its parameters of least largest error on the
    whole grid among the start and each working-set solve."""
    layout = _Layout(params)
    c, m = grid_points(spec.length)
    working = np.isin(_keys(spec.length, c, m), _keys(spec.length, *extreme_points(spec.length)))
    best = layout.flatten(params)
    best_error = _errors(spec, layout, best, c, m).max()
    for _ in range(ROUNDS):
        theta = _solve(spec, layout, best, bound, c[working], m[working], iterations)
        errors = _errors(spec, layout, theta, c, m)
        if errors.max() < best_error:
            best, best_error = theta, errors.max()
        outside = np.flatnonzero(~working & (errors > errors[working].max()))
        if not len(outside):
            break
        working[outside[np.argsort(errors[outside])[-ADDED:]]] = True
    return layout.unflatten(best)


def _keys(length: int, c: np.ndarray, m: np.ndarray) -> np.ndarray:
    """One integer per grid point (c, m), to match points between two lists."""
    return c * (length + 1) + m


class _Layout:
    """A run's trainable tensors as one float64 vector and back; `spans` are the index ranges
    of its trainable vectors (a head row counts with its bias, as the bound does)."""

    def __init__(self, params: Params) -> None:
        if params.head_w is not None:
            raise ValueError("the polish takes a regression run (no head rows)")
        self.names = list(params.tensors())
        self.sizes = [params.tensors()[name].shape[-1] for name in self.names]
        ends = np.cumsum(self.sizes)
        self.spans = list(zip(ends - self.sizes, ends, strict=True))

    def flatten(self, params: Params) -> np.ndarray:
        return torch.cat([params.tensors()[n][0].double() for n in self.names]).cpu().numpy()

    def tensors(self, theta: torch.Tensor) -> Params:
        parts = torch.split(theta, self.sizes)
        return Params(**{n: part[None] for n, part in zip(self.names, parts, strict=True)})

    def unflatten(self, theta: np.ndarray) -> Params:
        return self.tensors(torch.from_numpy(theta))

    def into_ball(self, theta: np.ndarray, bound: float) -> np.ndarray:
        """Each vector rescaled to norm <= bound (SLSQP may end a hair outside)."""
        out = theta.copy()
        for a, b in self.spans:
            norm = np.linalg.norm(out[a:b])
            if norm > bound:
                out[a:b] *= bound / norm
        return out


def _outputs(spec: ModelSpec, layout: _Layout, theta: torch.Tensor, c, m) -> torch.Tensor:
    return grid_forward(spec, layout.tensors(theta), torch.from_numpy(c), torch.from_numpy(m))[0]


def _errors(spec: ModelSpec, layout: _Layout, theta: np.ndarray, c, m) -> np.ndarray:
    with torch.no_grad():
        y = _outputs(spec, layout, torch.from_numpy(theta), c, m).numpy()
    return np.abs(y - c)


def _solve(
    spec: ModelSpec,
    layout: _Layout,
    theta: np.ndarray,
    bound: float,
    c: np.ndarray,
    m: np.ndarray,
    iterations: int,
) -> np.ndarray:
    """SLSQP on x = (theta, t): minimise t subject to t -+ (y_g - c_g) >= 0 on the points (c, m)
    and bound^2 - |v|^2 >= 0 for every trainable vector v; returned in the ball."""
    n = len(theta)

    def residuals(x: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            y = _outputs(spec, layout, torch.from_numpy(x[:n]), c, m).numpy()
        return np.concatenate([x[n] - (y - c), x[n] + (y - c)])

    def residuals_jacobian(x: np.ndarray) -> np.ndarray:
        jac = torch.func.jacrev(lambda t: _outputs(spec, layout, t, c, m))(torch.from_numpy(x[:n]))
        jac, ones = jac.numpy(), np.ones((len(c), 1))
        return np.vstack([np.hstack([-jac, ones]), np.hstack([jac, ones])])

    def slack(x: np.ndarray) -> np.ndarray:
        return np.array([bound**2 - x[a:b] @ x[a:b] for a, b in layout.spans])

    def slack_jacobian(x: np.ndarray) -> np.ndarray:
        out = np.zeros((len(layout.spans), n + 1))
        for row, (a, b) in enumerate(layout.spans):
            out[row, a:b] = -2 * x[a:b]
        return out

    objective = np.zeros(n + 1)
    objective[n] = 1.0
    start = np.append(theta, _errors(spec, layout, theta, c, m).max())
    result = minimize(
        lambda x: x[n],
        start,
        jac=lambda x: objective,
        method="SLSQP",
        constraints=[
            {"type": "ineq", "fun": residuals, "jac": residuals_jacobian},
            {"type": "ineq", "fun": slack, "jac": slack_jacobian},
        ],
        options={"maxiter": iterations, "ftol": 1e-12},
    )
    return layout.into_ball(result.x[:n], bound)
