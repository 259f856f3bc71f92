#!/usr/bin/env bash
# The main job: `torchbench run` (default: the example library's history,
# examples/tensorlib), published as a site. Arguments go to `torchbench run`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
exec "${PYTHON:-python3}" -m torchbench run "$@"
