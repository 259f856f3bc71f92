#!/usr/bin/env bash
# Installs the project and runs the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
if ! command -v chromium >/dev/null 2>&1; then
    echo "== installing chromium (Debian package) for the browser test of the published site"
    if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
    $SUDO apt-get update -qq && $SUDO apt-get install -y -qq chromium >/dev/null
fi
# --durations: the slowest tests named in every run (CI must stay under 30 minutes).
# Two workers (pytest-xdist), each taking whole test files (--dist loadfile: a file's
# module fixtures, such as one valgrind batch or one measured history, are built once):
# most slow tests wait on one busy process (valgrind, asv), so two overlap on two cores.
exec "${PYTHON:-python3}" -m pytest -q --durations=15 -n "${TEST_WORKERS:-2}" --dist loadfile "$@"
