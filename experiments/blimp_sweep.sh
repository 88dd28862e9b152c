#!/usr/bin/env bash
# Syntactic generalisation sweep: every system trained on full CoLA (2 epochs, the CPU's full preset), scored on
# BLiMP (33,500 pairs), seed by seed (so that a stopped sweep has whole seeds), each finished run archived into the
# repository at once (metrics, dev predictions, BLiMP report and compact per-pair results; no weights).
# Resumable: a finished run is skipped, a trained run without its BLiMP result is only scored.
#   bash experiments/blimp_sweep.sh [SEEDS] [OUT]        (default: 1,2,3,4,5 runs/cola_blimp)
# Threads: one per job (OMP_NUM_THREADS=1), as the CPU sweeps before it.
# Commit an archived run together with the refreshed tables of docs/results.md (python experiments/blimp_tables.py):
# tests/test_results_archive.py holds every cell of that section to the archive, and the seeds each row names to it.
set -euo pipefail
cd "$(dirname "$0")/.."
SEEDS=${1:-1,2,3,4,5}
OUT=${2:-runs/cola_blimp}
TO=docs/results/runs/cola_blimp
PY=${PYTHON:-.venv/bin/python}
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 HF_HUB_OFFLINE=1 SYNTAXFORMER_NO_PROGRESS=1
VARIANTS="baseline_default sgnet_default vanilla_layer_mean sbert_baseline sbert_gate sbert_gate_random"
for seed in ${SEEDS//,/ }; do
    for variant in $VARIANTS; do
        $PY experiments/sgnet_glue.py run --tasks cola --full --variants "$variant" --seeds "$seed" --suite blimp --out "$OUT"
        $PY experiments/sgnet_glue.py archive --out "$OUT" --to "$TO"
    done
    # SG-Net with random trees: every head re-attached at random (the parser-noise control at 1.0)
    $PY experiments/sgnet_glue.py run --tasks cola --full --variants sgnet_default --noise 1.0 --seeds "$seed" --suite blimp --out "$OUT"
    $PY experiments/sgnet_glue.py archive --out "$OUT" --to "$TO"
done
