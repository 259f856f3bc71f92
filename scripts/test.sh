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
# --durations: the slowest tests named in every run (CI must stay under 30 minutes)
exec "${PYTHON:-python3}" -m pytest -q --durations=15 "$@"
