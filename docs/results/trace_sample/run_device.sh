#!/usr/bin/env bash
# The whole device call (kind nvidia-h200, carry .whl): wheels to /tmp/site, megasim laid out as installed.
set -uo pipefail
export SITE=/tmp/site
mkdir -p $SITE
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target $SITE .whl/*.whl || exit 1
python3 -c "import sys; from pathlib import Path; sys.path.insert(0, 'tests'); \
from test_layering import installed_layout; installed_layout(Path('$SITE'))" || exit 1
export PYTHONPATH=$SITE PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv
python3 docs/results/trace_sample/run_device.py "$1" 2>&1 | tee "$1/log.txt"
