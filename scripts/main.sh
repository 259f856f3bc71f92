#!/usr/bin/env bash
# The main job, on the embedded example library (examples/tensorlib):
#   1. `torchbench run`: its six-commit history, measured;
#   2. `torchbench profile`: py-spy flame graphs of its dispatch cases at every commit;
#   3. `torchbench find`: the history's steps, each confirmed by re-measuring the
#      commits around it in alternating processes, with its culprit commit;
#   4. `torchbench publish`: the site (asv's pages, our Compare tables, the overhead
#      series with a flame graph per point and differential ones between commits,
#      the steps page with the culprits, asv's regressions feed);
#   5. `torchbench alert`: the pull-request verdict for its regressing commit
#      (00d31233 "TensorLike: normalise arguments with torch.utils._pytree",
#      against its parent b2e29fb6; the example's hashes are the same everywhere).
# OUT (default .torchbench) is the output folder. Every command names --example: run
# inside a git repository (this one), torchbench tracks that repository, as asv does.
#
# Exit status: 0 when the history was measured, find named the planted
# slowdown's commit and the alert found the known regression (the alert itself
# exits 1 for it, as it would on a pull request); 1 when find or the alert
# missed it; 2 when a step failed.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh || exit 2
PY="${PYTHON:-python3}"
OUT="${OUT:-.torchbench}"

"$PY" -m torchbench run --example --out "$OUT" --no-publish
run_status=$?
echo
echo "== torchbench profile: flame graphs of every commit"
"$PY" -m torchbench profile --example --out "$OUT"
profile_status=$?
echo
echo "== torchbench find: steps in the history, confirmed and bisected (budget 3 minutes a comparison)"
"$PY" -m torchbench find --example --out "$OUT"
find_status=$?
echo
"$PY" -m torchbench publish --out "$OUT"
publish_status=$?
# the site's steps page must name the planted slowdown's commit as a confirmed culprit
found_culprit=1
if "$PY" - "$OUT" <<'PY'
import json, sys
doc = json.load(open(f"{sys.argv[1]}/html/torchbench/regressions.json"))
hits = [s for s in doc["steps"] if s["status"] == "confirmed" and s["ratio"] > 1
        and ((s.get("culprit") or {}).get("culprit") or "").startswith("00d31233")]
print(f"== the site lists the planted slowdown: {len(hits)} confirmed step(s) with culprit 00d31233")
sys.exit(0 if hits else 1)
PY
then found_culprit=0; fi

echo
echo "== torchbench alert: the example's regressing commit against its parent (budget 4 minutes)"
# The budget counts from the start, instruction counts included (valgrind, about
# 2.5 minutes here for both sides); the regression decides within about 7 rounds,
# and the rows that stay undecided at the budget are reported inconclusive.
"$PY" -m torchbench alert --example --out "$OUT" --base b2e29fb6 --head 00d31233 --budget-minutes 4 \
    --markdown "$OUT/alert/example-regression.md"
alert_status=$?

if [ "$run_status" -ne 0 ] || [ "$profile_status" -ne 0 ] || [ "$find_status" -ne 0 ] \
    || [ "$publish_status" -ne 0 ] || [ "$alert_status" -eq 2 ]; then
    exit 2
elif [ "$found_culprit" -ne 0 ]; then
    echo "== find did not confirm the example's planted slowdown with its commit" >&2
    exit 1
elif [ "$alert_status" -eq 1 ]; then
    echo "== the alert found the example's known regression (its exit status 1 is the expected verdict)"
    exit 0
else
    echo "== the alert did not flag the example's known regression" >&2
    exit 1
fi
