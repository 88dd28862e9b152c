#!/usr/bin/env bash
# The full-data GLUE sweep (docs/results.md, "Full training sets, 3 seeds on every task"), one run at a time, each
# archived into docs/results/runs/glue_sweep/ as soon as it finishes (metrics, run.json, dev predictions; no
# weights), so that every cell of its tables can be recomputed from the repository. Same command and settings as
# the sweep (experiments/sgnet_glue.py --full: full training sets, SST-2 10,000 sentences, 2 epochs, batch 32, lr
# 1e-4, warm-up 10%). Task-major in the order given, then seed, then variant. Resumable: a finished run is skipped.
#   bash experiments/glue_sweep.sh [TASKS] [SEEDS] [OUT]    (default: rte,mrpc,stsb 1,2,3 runs/glue_sweep)
set -euo pipefail
cd "$(dirname "$0")/.."
TASKS=${1:-rte,mrpc,stsb}
SEEDS=${2:-1,2,3}
OUT=${3:-runs/glue_sweep}
TO=docs/results/runs/glue_sweep
PY=${PYTHON:-.venv/bin/python}
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 HF_HUB_OFFLINE=1 SYNTAXFORMER_NO_PROGRESS=1
for task in ${TASKS//,/ }; do
    for seed in ${SEEDS//,/ }; do
        for variant in baseline_default sgnet_default vanilla_layer_mean sbert_baseline sbert sbert_gate \
            sbert_gate_random; do
            if [ -f "$TO/$task/$variant/seed$seed/dev_predictions.json" ]; then continue; fi
            $PY experiments/sgnet_glue.py run --full --out "$OUT" --tasks "$task" --variants "$variant" --seeds "$seed"
            $PY experiments/sgnet_glue.py archive --out "$OUT" --to "$TO"
        done
    done
done
