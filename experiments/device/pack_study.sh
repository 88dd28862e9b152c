#!/usr/bin/env bash
# Prepare, on this machine (spaCy, the parse cache, ../shared/data), what experiments/device/study.sh needs on a GPU
# lease, under the git-ignored .device/: the MiniLM weights as fp16 (.device/model) and .device/studydata: CoLA and
# SST-2 (train, dev), BLiMP, and the parses of every text the study reads (CoLA whole and its 100 / 1,000 subsets,
# SST-2's 100 / 1,000 / 10,000 subsets and dev, every BLiMP sentence), xz-compressed (a call carries 64 MiB in all).
#     bash experiments/device/pack_study.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PY:-.venv/bin/python}
DATA=${SYNTAXFORMER_DATA:-../shared/data}
export HF_HUB_OFFLINE=1 SYNTAXFORMER_NO_PROGRESS=1 SYNTAXFORMER_DATA="$DATA"
[ -f .device/model/model.safetensors ] || ../shared/tools/device-pack model
S=.device/studydata
rm -rf $S && mkdir -p $S
tar cJf $S/data.tar.xz -C "$DATA" glue/CoLA/train.tsv glue/CoLA/dev.tsv glue/SST-2/train.tsv glue/SST-2/dev.tsv blimp
$PY experiments/sgnet_glue.py export-parses --preset gpu --tasks cola --sizes 100,1000,all --out-file $S/p_cola.jsonl
$PY experiments/sgnet_glue.py export-parses --preset gpu --tasks sst2 --sizes 100,1000,10000 --out-file $S/p_sst2.jsonl
$PY experiments/sgnet_glue.py export-parses --tasks "" --suite blimp --out-file $S/p_blimp.jsonl
cat $S/p_cola.jsonl $S/p_sst2.jsonl $S/p_blimp.jsonl | xz -T2 -9e > $S/parses.jsonl.xz
rm $S/p_*.jsonl
du -sh .device/model $S/*; echo 'carry: [".device/model", ".device/studydata"]'
