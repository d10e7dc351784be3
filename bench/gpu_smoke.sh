#!/usr/bin/env bash
# GPU readiness: one paper-scale item of each GPU rule on CUDA (Study A: one ViT-B depth-64 APJN
# measurement and the widest width-scan model; Study N: one GPT-2 small (alpha, storage) group
# at T = 1024; Study C: one float64 training length), with times and peak GPU memory appended
# to bench/RESULTS.md.
#   bench/gpu_smoke.sh                                   # on a GPU node, from the repository root
#   bench/gpu_smoke.sh --device cpu --configfile tests/configs/tiny.yaml   # the CPU path, seconds
# Extra arguments go to bench/gpu_smoke.py (--length L picks the Study C length, default 128).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-.venv/bin/python}
"$PYTHON" -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'available', torch.cuda.is_available())"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>/dev/null || true
"$PYTHON" bench/gpu_smoke.py --results bench/RESULTS.md "$@"  # records only runs on CUDA
