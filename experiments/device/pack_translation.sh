#!/usr/bin/env bash
# Prepare, on this machine (spaCy, the parse cache, ../shared/data), what experiments/device/translation.sh needs on
# a GPU lease, under the git-ignored .device/trdata: Multi30k train / val / test2016 and WMT newstest2013 (the
# `.sgm` source and reference the 100% runs translate), xz-compressed, and the spaCy parses of every English source
# sentence of those files as one xz-compressed syntaxformer JSONL (`translation.py export-parses`, looked up there
# with `--parser jsonl:FILE`). No pretrained weights: the translation models start from random init and learn
# their BPE vocabularies from the data. Also a transformers wheel of this machine's version in .device/wheels (see
# setup.sh). Checks that the carry fits the 64 MiB a call takes, the checkout included.
#     bash experiments/device/pack_translation.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PY:-.venv/bin/python}
DATA=${SYNTAXFORMER_DATA:-../shared/data}
export HF_HUB_OFFLINE=1 SYNTAXFORMER_NO_PROGRESS=1 SYNTAXFORMER_DATA="$DATA"
T=.device/trdata
rm -rf $T && mkdir -p $T
tar cJf $T/data.tar.xz -C "$DATA" multi30k/{train,val,test_2016_flickr}.{en,de} \
    wmt14_ende/newstest2013/newstest2013-{src.en,ref.de}.sgm
$PY experiments/translation.py export-parses --fractions 1.0 --no-progress --out-file $T/parses.jsonl
xz -T2 -9 -f $T/parses.jsonl
# setup.sh installs this wheel on the machine only where the image's transformers cannot import syntaxformer
V=$($PY -c 'import transformers; print(transformers.__version__)')
ls .device/wheels/transformers-"$V"-*.whl >/dev/null 2>&1 || rm -rf .device/wheels
ls .device/wheels/transformers-*.whl >/dev/null 2>&1 \
    || $PY -m pip download --quiet --no-deps --only-binary=:all: -d .device/wheels "transformers==$V" \
    || echo "no transformers wheel (pip download failed): carry without .device/wheels"
du -sh $T/* .device/wheels 2>/dev/null || true
bash experiments/device/carry_size.sh $T $(ls -d .device/wheels 2>/dev/null)
