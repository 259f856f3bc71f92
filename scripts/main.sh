#!/usr/bin/env bash
# The main job, on the embedded example library (examples/tensorlib):
#   1. `torchbench run`: its six-commit history, measured;
#   2. `torchbench profile`: py-spy flame graphs of its dispatch cases at every commit;
#   3. `torchbench publish`: the site (asv's pages, our Compare tables, the overhead
#      series with a flame graph per point and differential ones between commits);
#   4. `torchbench alert`: the pull-request verdict for its regressing commit
#      (00d31233 "TensorLike: normalise arguments with torch.utils._pytree",
#      against its parent b2e29fb6; the example's hashes are the same everywhere).
# OUT (default .torchbench) is the output folder.
#
# Exit status: 0 when the history was measured and the alert found the known
# regression (the alert itself exits 1 for it, as it would on a pull request);
# 1 when the alert missed it; 2 when a step failed.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh || exit 2
PY="${PYTHON:-python3}"
OUT="${OUT:-.torchbench}"

"$PY" -m torchbench run --out "$OUT" --no-publish
run_status=$?
echo
echo "== torchbench profile: flame graphs of every commit"
"$PY" -m torchbench profile --out "$OUT"
profile_status=$?
echo
"$PY" -m torchbench publish --out "$OUT"
publish_status=$?

echo
echo "== torchbench alert: the example's regressing commit against its parent (budget 4 minutes)"
# The budget counts from the start, instruction counts included (valgrind, about
# 2.5 minutes here for both sides); the regression decides within about 7 rounds,
# and the rows that stay undecided at the budget are reported inconclusive.
"$PY" -m torchbench alert --out "$OUT" --base b2e29fb6 --head 00d31233 --budget-minutes 4 \
    --markdown "$OUT/alert/example-regression.md"
alert_status=$?

if [ "$run_status" -ne 0 ] || [ "$profile_status" -ne 0 ] || [ "$publish_status" -ne 0 ] \
    || [ "$alert_status" -eq 2 ]; then
    exit 2
elif [ "$alert_status" -eq 1 ]; then
    echo "== the alert found the example's known regression (its exit status 1 is the expected verdict)"
    exit 0
else
    echo "== the alert did not flag the example's known regression" >&2
    exit 1
fi
