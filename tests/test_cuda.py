"""The CUDA path computes what the CPU path computes: every GPU rule's table at the tiny config's
scale on both devices, compared column by column. Run on a GPU node (skipped without one);
`bench/gpu_smoke.sh` measures the same rules at paper scale.

Study N's measured errors in a native format (fp32, bf16, fp16) are the device's own rounding:
a GPU whose products sum in another order than the CPU's gives errors that agree in size only, so
they are bounded by a factor. The emulated formats round in our own code and agree to float64
precision, as does everything else (bounds, amplifications, stream norms). Measured on an H200
with TF32 off (bench/RESULTS.md): every APJN and counting column equal, the fp32 errors to 1e-12
relative; with TF32 on, the fp32 error ratios CUDA/CPU were 0.7 to 3.9."""

import sys

import numpy as np
import pandas as pd
import pytest
import torch
from conftest import ROOT, TINY

from transformer_stability.device import resolve_device
from transformer_stability.numerics.rounding import Precision

sys.path.insert(0, str(ROOT / "bench"))
from paper_scale import load_config, rule_items  # noqa: E402

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device visible")

# float32 summed in another order: relative differences of a few ulps per operation, grown
# through a depth-2 model's blocks and the estimators' probe averages (H200, TF32 on for
# convolutions: at most 2.2e-7; TF32 off: none)
RTOL = {"apjn_curves": 1e-5, "apjn_width": 1e-5, "numerics_gpt2": 1e-9, "counting_training": 1e-9}
NATIVE_ERROR_COLUMNS = {"p01", "p25", "p50", "p75", "p99"} | {
    "measured",
    "measured_rel",
    "measured_rel_l2",
}
NATIVE_ERROR_FACTOR = 8.0  # a native format's error statistics agree in size, not in value
# the typical estimate's source gains are float64 finite differences at a step of 2^-26
# (numerics/source_gains.py): float64 summed in another order moves them by ~1e-16 / 2^-26
# (H200: 7.9e-10)
FINITE_DIFFERENCE_RTOL = {"typical_rel_l2": 1e-7}


def as_frames(tables: pd.DataFrame | dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    return tables if isinstance(tables, dict) else {"table": tables}


def native_rows(frame: pd.DataFrame) -> pd.Series:
    """Rows of Study N's tables measured in a native (torch dtype) format."""
    if "precision" not in frame:
        return pd.Series(False, index=frame.index)
    return ~frame["precision"].map(lambda name: Precision.parse(name).emulated)


def largest_relative_difference(cpu: pd.Series, cuda: pd.Series) -> float:
    a, b = cpu.to_numpy(dtype=float), cuda.to_numpy(dtype=float)
    both = np.isfinite(a) & np.isfinite(b)
    assert (np.isfinite(a) == np.isfinite(b)).all(), "a value finite on one device only"
    scale = np.maximum(np.abs(a[both]), np.abs(b[both]))
    diff = np.abs(a[both] - b[both])
    return float(np.max(np.where(scale > 0, diff / np.where(scale > 0, scale, 1), 0), initial=0))


ITEMS = [entry for entry in rule_items(load_config(ROOT / TINY)) if entry[0] in RTOL]


@pytest.mark.parametrize(("rule", "item", "table_of"), ITEMS, ids=[i[1].id for i in ITEMS])
def test_a_gpu_rule_computes_on_cuda_what_it_computes_on_the_cpu(rule, item, table_of):
    cpu = as_frames(table_of(item, torch.device("cpu")))
    cuda = as_frames(table_of(item, resolve_device("cuda")))
    assert cpu.keys() == cuda.keys()
    for name, frame in cpu.items():
        other = cuda[name]
        assert list(frame.columns) == list(other.columns) and len(frame) == len(other)
        numeric = frame.select_dtypes("number").columns
        pd.testing.assert_frame_equal(frame.drop(columns=numeric), other.drop(columns=numeric))
        native = native_rows(frame)
        own_rounding = [c for c in numeric if c in NATIVE_ERROR_COLUMNS]
        for column in own_rounding:
            ratio = other.loc[native, column] / frame.loc[native, column]
            within = ratio.between(1 / NATIVE_ERROR_FACTOR, NATIVE_ERROR_FACTOR)
            assert within.all(), (column, ratio)
        exact = frame[~native]
        worst = {c: largest_relative_difference(exact[c], other.loc[~native, c]) for c in numeric}
        worst |= {
            c: largest_relative_difference(frame.loc[native, c], other.loc[native, c])
            for c in numeric
            if c not in own_rounding
        }
        print(rule, item.id, name, {c: f"{v:.1e}" for c, v in worst.items() if v > 0})
        over = {c: v for c, v in worst.items() if v > FINITE_DIFFERENCE_RTOL.get(c, RTOL[rule])}
        assert not over, worst


def test_float32_on_cuda_is_float32_not_tf32():
    resolve_device("cuda")
    assert not torch.backends.cuda.matmul.allow_tf32
    assert not torch.backends.cudnn.allow_tf32
    a = torch.randn(256, 256, dtype=torch.float64)
    b = torch.randn(256, 256, dtype=torch.float64)
    exact = a @ b
    on_gpu = (a.float().cuda() @ b.float().cuda()).double().cpu()
    # float32 products: ~1e-6 relative; TF32's 10-bit mantissa would give ~1e-3
    assert ((on_gpu - exact).abs().max() / exact.abs().max()).item() < 1e-5
