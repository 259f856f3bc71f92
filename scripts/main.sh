#!/usr/bin/env bash
# The main job. For now: the seed tutorial's batched-dot comparison table,
# measured by torchbench_core.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
exec "${PYTHON:-python3}" -m torchbench_core.examples.batched_dot "$@"
