#!/usr/bin/env bash
# The main job: asv history over the last commits (default: 3 of this
# repository), published as an asv site. Arguments go to torchbench.history.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
exec "${PYTHON:-python3}" -m torchbench.history "$@"
