#!/usr/bin/env bash
# Does a gain need correct trees? Gold vs parsed vs random trees where gold trees exist: SST-2 from the SST
# treebank (sst2_trees: 6,920 training sentences with gold constituency trees, neutral dropped; dev 872), at the
# learning curves' smallest size (100 training sentences, data seed 0, the same for every system), 5 seeds.
# Systems: the plain encoder (reference); SG-Net and gated Syntax-BERT each on
#   gold trees    (`syntax: given`: the annotated constituency tree, dependencies from it by head rules),
#   parsed trees  (`syntax: parser`: spaCy en_core_web_sm on the raw text, constituency read off its dependencies),
#   random trees  (SG-Net: every head re-attached at random, --noise 1.0; Syntax-BERT: random masks).
# Training: the full preset of experiments/sgnet_glue.py (batch 32, lr 1e-4, warm-up 10%, max_length 64) for at
# least 200 optimisation steps (--min-steps 200), as the learning curves. Seed-major, resumable (a finished run is
# skipped, and so is one the committed archive holds), each run archived into docs/results/runs/sst_trees/ as soon
# as it finishes (metrics, dev predictions).
#   bash experiments/sst_trees_sweep.sh [SEEDS] [OUT]        (default: 1,2,3,4,5 runs/sst_trees)
set -euo pipefail
cd "$(dirname "$0")/.."
SEEDS=${1:-1,2,3,4,5}
OUT=${2:-runs/sst_trees}
TO=docs/results/runs/sst_trees
PY=${PYTHON:-.venv/bin/python}
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 HF_HUB_OFFLINE=1 SYNTAXFORMER_NO_PROGRESS=1
run() {  # one run of one seed, archived at once; skipped where the committed archive holds it
    local dir=$1 seed=$2; shift 2
    if [ -f "$TO/sst2_trees/${dir}_n100/seed$seed/dev_predictions.json" ]; then return; fi
    $PY experiments/sgnet_glue.py run --full --min-steps 200 --tasks sst2_trees --sizes 100 --out "$OUT" "$@"
    $PY experiments/sgnet_glue.py archive --out "$OUT" --to "$TO"
}
for seed in ${SEEDS//,/ }; do
    for variant in baseline_default sgnet_default_gold sgnet_default_parsed sbert_gate_gold sbert_gate_parsed \
        sbert_gate_random; do
        run "$variant" "$seed" --variants "$variant" --seeds "$seed"
    done
    run sgnet_default_gold_noise1 "$seed" --variants sgnet_default_gold --noise 1.0 --seeds "$seed"
done
