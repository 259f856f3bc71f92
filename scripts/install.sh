#!/usr/bin/env bash
# Installs everything the project needs into the current Python (idempotent).
# torch is pinned through constraints.txt and installed by install_torch.sh, which
# says which build pip takes and refuses a CUDA build on a machine without a GPU
# (TORCH_INDEX_URL names an index with the CPU build: see that script).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
export PIP_ROOT_USER_ACTION=ignore

if ! command -v valgrind >/dev/null 2>&1; then
    echo "== installing valgrind (Debian package) for instruction counts"
    if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
    $SUDO apt-get update -qq && $SUDO apt-get install -y -qq valgrind >/dev/null
fi

# glibc's debug symbols name malloc's inner functions (_int_malloc, _int_free, ...) in valgrind's dumps, so the
# counts can leave the allocators out (docs/counts.md); Debian's valgrind depends on them already
if command -v dpkg >/dev/null 2>&1 && ! dpkg -s libc6-dbg >/dev/null 2>&1; then
    echo "== installing libc6-dbg (Debian package): glibc's symbols, for counts outside the allocators"
    if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
    $SUDO apt-get update -qq && $SUDO apt-get install -y -qq libc6-dbg >/dev/null
fi

if ! command -v c++ >/dev/null 2>&1; then
    echo "== installing g++ (Debian package) for C++ statements (Timer(language='cpp'))"
    if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
    $SUDO apt-get update -qq && $SUDO apt-get install -y -qq g++ >/dev/null
fi

echo "== installing Python packages (torch pinned by constraints.txt)"
bash scripts/install_torch.sh
"$PYTHON" -m pip install -q --disable-pip-version-check -c constraints.txt -e ".[test]"
"$PYTHON" - <<'PY'
import torch
if torch.version.cuda and not torch.cuda.is_available():
    print(f"== note: torch {torch.__version__} is a CUDA build on a machine without a GPU (it runs on the CPU)")
print(f"== torch {torch.__version__} ready")
PY
