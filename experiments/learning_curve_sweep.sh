#!/usr/bin/env bash
# Low resource: learning curves of the plain encoder, SG-Net and gated Syntax-BERT on CoLA (100 / 1,000 training
# sentences) and SST-2 (100 / 1,000 / 10,000), with the random-tree controls (SG-Net with every head re-attached at
# random; gated Syntax-BERT with random trees) at the smallest size. Seed-major (a stopped sweep has whole seeds),
# each finished run archived into the repository at once (metrics, dev predictions; no weights).
# CoLA's "all" point is the syntactic-generalisation sweep's runs (experiments/blimp_sweep.sh: the same command
# without --sizes), so it is not trained again here. Nor is SST-2's 10,000 point where the full-data GLUE sweep
# (experiments/glue_sweep.sh, docs/results/runs/glue_sweep/sst2/) has the seed: at 10,000 sentences --min-steps 200
# changes nothing (626 steps), so its run configuration is this sweep's but for the output folder; seeds it lacks
# are trained here (experiments/curve_tables.py joins the two).
# Training: the full preset of experiments/sgnet_glue.py (batch 32, lr 1e-4, warm-up 10%, 2 epochs, max_length 64),
# except that a subset giving fewer than 200 optimisation steps trains 200 steps (--min-steps 200: 100 sentences =
# 64 epochs, 1,000 = 6.4 epochs); a seeded subset (data seed 0), the same for every system; full dev sets.
# Resumable: a finished run is skipped; each run is archived as soon as it finishes.
#   bash experiments/learning_curve_sweep.sh [SEEDS] [OUT]        (default: 1,2,3,4,5 runs/learning_curves)
set -euo pipefail
cd "$(dirname "$0")/.."
SEEDS=${1:-1,2,3,4,5}
OUT=${2:-runs/learning_curves}
TO=docs/results/runs/learning_curves
PY=${PYTHON:-.venv/bin/python}
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 HF_HUB_OFFLINE=1 SYNTAXFORMER_NO_PROGRESS=1
run() {  # one (task, variant, size) run of one seed, archived at once
    $PY experiments/sgnet_glue.py run --full --min-steps 200 --out "$OUT" "$@"
    $PY experiments/sgnet_glue.py archive --out "$OUT" --to "$TO"
}
for seed in ${SEEDS//,/ }; do
    for task_sizes in cola:100,1000 sst2:100,1000,10000; do
        task=${task_sizes%%:*}
        sizes=${task_sizes#*:}
        for size in ${sizes//,/ }; do  # small sizes first: they finish first
            for variant in baseline_default sgnet_default sbert_gate; do
                if [ "$task:$size" = sst2:10000 ] &&
                    [ -f "docs/results/runs/glue_sweep/sst2/$variant/seed$seed/dev_predictions.json" ]; then
                    continue  # the GLUE sweep's run (the same configuration)
                fi
                run --tasks "$task" --variants "$variant" --sizes "$size" --seeds "$seed"
            done
            if [ "$size" = 100 ]; then  # random-tree controls at the smallest size
                run --tasks "$task" --variants sgnet_default --noise 1.0 --sizes 100 --seeds "$seed"
                run --tasks "$task" --variants sbert_gate_random --sizes 100 --seeds "$seed"
            fi
        done
    done
done
