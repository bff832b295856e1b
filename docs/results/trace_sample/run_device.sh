#!/usr/bin/env bash
# The whole device call (kind nvidia-h200, carry .whl): wheels to /tmp/site, megasim laid out as installed.
set -uo pipefail
source .ci/device_site.sh || exit 1
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv
python3 docs/results/trace_sample/run_device.py "$1" 2>&1 | tee "$1/log.txt"
