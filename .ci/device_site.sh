# Sourced on a device machine, from the repository root, by .ci/gpu and the device scripts under docs/results:
# the carried wheels (.whl/) and megasim, laid out as its wheel installs it (tests/test_layering.py), go to
# $SITE (default /tmp/site), which goes on PYTHONPATH. The device's python has CuPy, torch and pytest but neither
# megasim's install nor simpy. Returns non-zero when a step fails; the caller exits.
SITE=${SITE:-/tmp/site}
mkdir -p "$SITE"
if compgen -G ".whl/*.whl" >/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" .whl/*.whl || return 1
fi
rm -rf "$SITE/megasim"
python3 -c "import sys; from pathlib import Path; sys.path.insert(0, 'tests'); \
from test_layering import installed_layout; installed_layout(Path('$SITE'))" || return 1
export SITE PYTHONPATH="$SITE" PYTHONUNBUFFERED=1
