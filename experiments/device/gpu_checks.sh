#!/usr/bin/env bash
# On the GPU machine: the gpu-marked tests, then the SG-Net and Syntax-BERT
# (fast vs triton) benchmarks at 128 / 512 tokens.
# Device call: command `bash experiments/device/gpu_checks.sh`, carry [".device/model", ".device/testdata"].
source experiments/device/setup.sh
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
python3 -c "import torch, transformers; print(torch.__version__, transformers.__version__, torch.cuda.get_device_name())"
SYNTAXFORMER_DATA=.device/testdata SYNTAXFORMER_TEST_PARSER=jsonl:.device/testdata/parses.jsonl SYNTAXFORMER_CACHE=/tmp/sft \
    timeout 300 python3 -m pytest -p no:cacheprovider -o addopts="" -q -m gpu --continue-on-collection-errors -rs tests/ \
    2>&1 | tee "$OUT/gpu_tests.log" | tail -30
for L in 128 512; do
    SYNTAXFORMER_DATA=.device/testdata timeout 150 python3 benchmarks/sgnet_overhead.py --device cuda --length $L \
        --batch 32 --threads 0 2>&1 | tail -1 | tee "$OUT/sgnet_overhead_$L.json"
done
for L in 128 512; do
    SYNTAXFORMER_DATA=.device/testdata timeout 200 python3 benchmarks/syntax_bert_attention.py --device cuda --quick \
        --batch 8 --length $L --implementations fast,triton --no-rss 2>&1 | tail -1 | tee "$OUT/syntax_bert_$L.json"
done
