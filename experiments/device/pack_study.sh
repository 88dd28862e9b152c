#!/usr/bin/env bash
# Prepare, on this machine (spaCy, the parse cache, ../shared/data), what experiments/device/study.sh needs on a GPU
# lease, under the git-ignored .device/: the MiniLM weights as fp16 (.device/model) and .device/studydata: the data
# and the parses of every text the queued runs read (experiments/device/study_jobs.sh: only the runs the committed
# archive lacks), xz-compressed. CoLA (whole, and its 100 / 1,000 subsets) where a CoLA run is queued, SST-2 (the
# queued sizes and dev) where an SST-2 run is, BLiMP's sentences where a BLiMP run is. A call carries 64 MiB in all,
# the checkout included: the script adds it up and stops if the carry would not fit.
#     bash experiments/device/pack_study.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PY:-.venv/bin/python}
DATA=${SYNTAXFORMER_DATA:-../shared/data}
export HF_HUB_OFFLINE=1 SYNTAXFORMER_NO_PROGRESS=1 SYNTAXFORMER_DATA="$DATA"
[ -f .device/model/model.safetensors ] || ../shared/tools/device-pack model
S=.device/studydata
queue=$(bash experiments/device/study_jobs.sh all)
[ -n "$queue" ] || { echo "nothing queued: the committed archive holds every run of the study"; exit 0; }
sizes() {  # the training-set sizes queued for task $1, comma-separated
    grep -e "--tasks $1 " <<< "$queue" | grep -o -e "--sizes [^ ]*" | cut -d' ' -f2 | sort -u | paste -sd, -
}
rm -rf $S && mkdir -p $S
files=() parts=()
if grep -q -e "--tasks cola " <<< "$queue"; then
    files+=(glue/CoLA/train.tsv glue/CoLA/dev.tsv)
    $PY experiments/sgnet_glue.py export-parses --preset gpu --tasks cola --sizes 100,1000,all --out-file $S/p_cola.jsonl
    parts+=(cola)
fi
if grep -q -e "--tasks sst2 " <<< "$queue"; then
    files+=(glue/SST-2/train.tsv glue/SST-2/dev.tsv)
    $PY experiments/sgnet_glue.py export-parses --preset gpu --tasks sst2 --sizes "$(sizes sst2)" --out-file $S/p_sst2.jsonl
    parts+=("sst2 ($(sizes sst2))")
fi
if grep -q -e "--suite blimp" <<< "$queue"; then
    files+=(blimp)
    $PY experiments/sgnet_glue.py export-parses --tasks "" --suite blimp --out-file $S/p_blimp.jsonl
    parts+=(blimp)
fi
tar cJf $S/data.tar.xz -C "$DATA" "${files[@]}"
cat $S/p_*.jsonl | awk '!seen[$0]++' | xz -T2 -9e > $S/parses.jsonl.xz
rm $S/p_*.jsonl
echo "$(wc -l <<< "$queue") runs queued; packed: ${parts[*]}"
du -sh .device/model $S/*
bash experiments/device/carry_size.sh .device/model $S
