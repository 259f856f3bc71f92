#!/usr/bin/env bash
# Installs everything the project needs into the current Python (idempotent).
# torch is pinned through constraints.txt: on a CPU machine that resolves to
# the CPU wheel, never to the multi-GB CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
export PIP_ROOT_USER_ACTION=ignore

if ! command -v valgrind >/dev/null 2>&1; then
    echo "== installing valgrind (Debian package) for instruction counts"
    if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
    $SUDO apt-get update -qq && $SUDO apt-get install -y -qq valgrind >/dev/null
fi

echo "== installing Python packages (torch pinned by constraints.txt)"
"$PYTHON" -m pip install -q --disable-pip-version-check -c constraints.txt torch
"$PYTHON" -m pip install -q --disable-pip-version-check -c constraints.txt -e ".[test]"
"$PYTHON" - <<'PY'
import torch
assert not torch.version.cuda or torch.cuda.is_available(), (
    f"installed torch {torch.__version__} is a CUDA build on a machine without a GPU")
print(f"== torch {torch.__version__} ready")
PY
