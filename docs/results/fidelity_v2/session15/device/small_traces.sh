#!/usr/bin/env bash
# The device call (kind nvidia-h200, carry .whl): python3 docs/results/fidelity_v2/session15/device/small_traces.py.
set -uo pipefail
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "not an H200"; exit 3; }
source .ci/device_site.sh || exit 1
python3 docs/results/fidelity_v2/session15/device/small_traces.py "$1" 2>&1 | tee "$1/log.txt"
