#!/usr/bin/env bash
# Installs torch, pinned by constraints.txt, into the current Python, and says which build it takes.
#
# pip decides where torch comes from, and the answer differs by machine:
#   * this project's machines configure pip with a local CPU wheel (torch 2.13.0+cpu);
#   * an ordinary Linux machine gets torch's default build from the public index, with its
#     CUDA libraries (several GB), even where there is no GPU.
# So pip is first asked (a dry run) what it would install. A CUDA build on a machine with no
# NVIDIA GPU is refused before anything is downloaded beyond its metadata, with the two ways on:
#   TORCH_INDEX_URL=URL               take torch from this index as well, e.g. PyTorch's CPU wheel
#                                     index (https://download.pytorch.org/whl/cpu); its +cpu build
#                                     outranks the same release without a local label
#   TORCHBENCH_ALLOW_CUDA_TORCH=1     take the CUDA build all the same (it runs on a CPU)
# Exit status: 0 installed; 2 refused or failed.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
export PIP_ROOT_USER_ACTION=ignore
pip_args=(--disable-pip-version-check -c constraints.txt)
if [ -n "${TORCH_INDEX_URL:-}" ]; then
    pip_args+=(--extra-index-url "$TORCH_INDEX_URL")
    echo "== torch: also looking in TORCH_INDEX_URL=$TORCH_INDEX_URL"
fi

report=$(mktemp)
trap 'rm -f "$report"' EXIT
if ! "$PYTHON" -m pip install -q --dry-run --report "$report" "${pip_args[@]}" torch; then
    echo "== torch: pip could not resolve torch (constraints.txt pins it)" >&2
    exit 2
fi
# what pip chose: "VERSION cuda" (a build that requires NVIDIA's libraries) or "VERSION cpu"
chosen=$("$PYTHON" - "$report" <<'PY'
import json, sys
for item in json.load(open(sys.argv[1]))["install"]:
    meta = item["metadata"]
    if meta["name"].lower() == "torch":
        cuda = any(r.lower().startswith("nvidia-") for r in meta.get("requires_dist") or [])
        print(meta["version"], "cuda" if cuda else "cpu")
PY
)
read -r version build <<<"${chosen:-none none}"
if [ "$version" = none ]; then
    echo "== torch: already installed as pinned (pip would install nothing)"
    exit 0
fi
echo "== torch: pip would install torch $version ($build build)"
if [ "$build" = cuda ] && ! command -v nvidia-smi >/dev/null 2>&1 && [ -z "${TORCHBENCH_ALLOW_CUDA_TORCH:-}" ]; then
    cat >&2 <<EOF
== torch $version is a CUDA build (several GB of NVIDIA libraries) and this machine has no NVIDIA GPU.
   For the CPU build:  TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu bash scripts/install.sh
   To take it anyway:  TORCHBENCH_ALLOW_CUDA_TORCH=1 bash scripts/install.sh
EOF
    exit 2
fi
"$PYTHON" -m pip install -q "${pip_args[@]}" torch
