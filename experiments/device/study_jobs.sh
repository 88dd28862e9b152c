#!/usr/bin/env bash
# The queue of the "where does syntax help?" GPU-preset study, one run's arguments to `sgnet_glue.py run --preset gpu`
# per line, in the order they should run (seed-major; the slowest BLiMP scorers first), leaving out every run the
# committed archive (docs/results/runs/) already holds. Read by experiments/device/study.sh (on the GPU) and by
# experiments/gpu_preset_cpu_fill.sh (the same runs on the CPU).
#     bash experiments/device/study_jobs.sh [blimp|curves|sst2all|all]
# sst2all: SST-2's whole training set (67,349 sentences, 3 epochs) for the three systems of the curves, 5 seeds;
# a GPU's work (not part of "curves", which experiments/curve_cpu_fill.sh runs on the CPU).
set -euo pipefail
cd "$(dirname "$0")/../.."
PART=${1:-all}
B="--tasks cola --suite blimp --out runs/gpu/cola_blimp"
L="--min-steps 200 --out runs/gpu/learning_curves"
A=docs/results/runs
job() {  # ARCHIVE_FOLDER ARGS...: print ARGS unless the archive holds that run (its suite result too, for BLiMP)
    local done=$A/$1/metrics.json; shift
    [[ "$*" == *--suite* ]] && done=${done%metrics.json}suites/blimp/report.json
    [ -f "$done" ] || echo "$*"
}
if [ "$PART" = all ] || [ "$PART" = blimp ]; then
    for s in 1 2 3 4 5; do  # the slowest to score first (random trees: their features are built per sentence)
        job cola_blimp_gpu_preset/cola/sbert_gate_random/seed$s "$B --variants sbert_gate_random --seeds $s"
        for v in sbert_gate baseline_default sgnet_default vanilla_layer_mean sbert_baseline; do
            job cola_blimp_gpu_preset/cola/$v/seed$s "$B --variants $v --seeds $s"
        done
        job cola_blimp_gpu_preset/cola/sgnet_default_noise1/seed$s "$B --variants sgnet_default --noise 1.0 --seeds $s"
    done
fi
if [ "$PART" = all ] || [ "$PART" = curves ]; then
    for task_sizes in cola:100,1000 sst2:100,1000,10000; do
        t=${task_sizes%%:*}
        C=learning_curves_gpu_preset/$t
        for s in 1 2 3 4 5; do
            for z in $(echo "${task_sizes#*:}" | tr , ' '); do
                for v in baseline_default sgnet_default sbert_gate; do
                    job $C/${v}_n$z/seed$s "$L --tasks $t --variants $v --sizes $z --seeds $s"
                done
            done
            job $C/sgnet_default_noise1_n100/seed$s "$L --tasks $t --variants sgnet_default --noise 1.0 --sizes 100 --seeds $s"
            job $C/sbert_gate_random_n100/seed$s "$L --tasks $t --variants sbert_gate_random --sizes 100 --seeds $s"
        done
    done
fi
if [ "$PART" = all ] || [ "$PART" = sst2all ]; then  # after the curves: the longest runs
    for s in 1 2 3 4 5; do
        for v in baseline_default sgnet_default sbert_gate; do
            job learning_curves_gpu_preset/sst2/${v}_nall/seed$s "$L --tasks sst2 --variants $v --sizes all --seeds $s"
        done
    done
fi
