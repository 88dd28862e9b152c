#!/usr/bin/env bash
# The translation study (experiments/translation.py: arms baseline, syntax, shuffled_tags, random_tags) one run at a
# time on one thread, 600 updates each, each finished run archived into docs/results/runs/translation_steps600/
# (hypotheses, metrics, dev-BLEU curve) before the next starts. Resumable: a finished run is skipped, an interrupted one continues from its last
# checkpoint. The queue is every (fraction, seed, arm) in this order, seeds outer so that each seed's four arms finish
# together:
#     bash experiments/translation_sweep.sh                         (10% of Multi30k, seeds 1-5, then 100%, seeds 1-3)
#     FRACTIONS=0.1 SEEDS=1 bash experiments/translation_sweep.sh   (one seed of the 10% arms)
#     MAX_STEPS=400 ... bash experiments/translation_sweep.sh       (the first, too short budget: runs/translation,
#                                                                    archived in docs/results/runs/translation)
#     FRACTIONS=1.0 MAX_STEPS=3000 EVAL_STEPS=100 ...               (100%: validation, dev-BLEU point and checkpoint
#                                                                    every 100 updates instead of 50, so that less of
#                                                                    a long run goes to decoding the dev set)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
ARMS=${ARMS:-baseline,syntax,shuffled_tags,random_tags}
MAX_STEPS=${MAX_STEPS:-600}
EVAL_STEPS=${EVAL_STEPS:-}
NAME=translation$([ "$MAX_STEPS" = 400 ] || echo "_steps$MAX_STEPS")
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 HF_HUB_OFFLINE=1 SYNTAXFORMER_NO_PROGRESS=1 PYTHONPATH=$PWD/src
for fraction in ${FRACTIONS:-0.1 1.0}; do
    seeds=${SEEDS:-$([ "$fraction" = 1.0 ] && echo "1 2 3" || echo "1 2 3 4 5")}
    for seed in $seeds; do
        for arm in ${ARMS//,/ }; do
            nice "$PY" experiments/translation.py run --fractions "$fraction" --arms "$arm" --seeds "$seed" \
                --max-steps "$MAX_STEPS" ${EVAL_STEPS:+--eval-steps "$EVAL_STEPS"} --out "runs/$NAME" --no-progress
            "$PY" experiments/translation.py archive --out "runs/$NAME" --to "docs/results/runs/$NAME"
        done
    done
done
