#!/usr/bin/env bash
# Prepare, on this machine (spaCy, the parse cache, ../shared/data), what a GPU lease needs in .device/ (ignored by
# git; a call carries at most 64 MiB): the MiniLM weights as fp16 (~45 MB), the GLUE / SST train+dev files, the
# parses of every text of the GLUE sweep as one xz-compressed JSONL (~10 MB), and a 96-sentence SST-2 slice
# with its parses for the gpu-marked tests. Run from the repository root after `make setup`:
#     bash experiments/device/pack.sh
set -euo pipefail
PY=${PY:-.venv/bin/python}
DATA=${SYNTAXFORMER_DATA:-../shared/data}
export HF_HUB_OFFLINE=1 SYNTAXFORMER_NO_PROGRESS=1
../shared/tools/device-pack model
rm -rf .device/sweepdata .device/testdata
for t in CoLA MRPC RTE SST-2 STS-B; do mkdir -p .device/sweepdata/glue/$t; cp "$DATA"/glue/$t/{train,dev}.tsv .device/sweepdata/glue/$t/; done
mkdir -p .device/sweepdata/sst_trees && cp "$DATA"/sst_trees/{train,dev}.txt .device/sweepdata/sst_trees/
SYNTAXFORMER_DATA="$DATA" $PY experiments/sgnet_glue.py export-parses --preset gpu \
    --tasks cola,mrpc,stsb,rte,sst2,sst2_trees,sst5 --out-file .device/sweepdata/parses.jsonl
xz -T2 -6 -f .device/sweepdata/parses.jsonl
mkdir -p .device/testdata/glue/SST-2 .device/testdata/ud_ewt
head -65 "$DATA"/glue/SST-2/train.tsv > .device/testdata/glue/SST-2/train.tsv
head -33 "$DATA"/glue/SST-2/dev.tsv > .device/testdata/glue/SST-2/dev.tsv
cp "$DATA"/ud_ewt/en_ewt-ud-dev.conllu .device/testdata/ud_ewt/
SYNTAXFORMER_DATA=.device/testdata $PY experiments/sgnet_glue.py export-parses --tasks sst2 \
    --out-file .device/testdata/parses.jsonl
du -sh .device/* ; echo "carry: [\".device/model\", \".device/sweepdata\", \".device/testdata\"]"
