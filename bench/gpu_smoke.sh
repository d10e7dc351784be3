#!/usr/bin/env bash
# GPU readiness: the paper item of every rule the cluster plan sizes, on CUDA, each in its own
# process, with its time and peak GPU and host memory beside the cost model's prediction,
# appended to bench/RESULTS.md (bench/paper_scale.py --full; `make bench-paper` is the CPU
# meter, with reduced forms).
#   bench/gpu_smoke.sh                                   # on a GPU node, from the repository root
#   bench/gpu_smoke.sh --device cpu --configfile tests/configs/tiny.yaml --results /tmp/r.md
# Extra arguments go to bench/paper_scale.py (--rules R ... picks rules, --timeout seconds).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-.venv/bin/python}
"$PYTHON" -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'available', torch.cuda.is_available())"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>/dev/null || true
"$PYTHON" bench/paper_scale.py --full --device cuda --results bench/RESULTS.md "$@"
