#!/usr/bin/env bash
# On the GPU machine: the fused Triton kernels of the Syntax-BERT attention (implementation="triton") in one call of
# under 6 minutes: their gpu-marked tests (fp32 and bf16 against the float64 reference, whole models), then
# benchmarks/syntax_bert_attention.py --device cuda with fast and triton beside plain SDPA at 8x128 fp32,
# 64x128 bf16, 8x512 bf16 and 32x512 bf16, MiniLM shape (the carried checkpoint) then BERT-base shape (random
# weights), then every other gpu-marked test in the time that is left. Each benchmark JSON (its command, device,
# commit inside) goes to $OUT/gpu/<name>.json, ready to be committed under docs/results/gpu/; logs beside them.
#
# Device call: command `bash experiments/device/kernel_checks.sh`, carry [".device/model", ".device/testdata"]
# (made by experiments/device/pack.sh). While the GPU image's transformers cannot import syntaxformer, also carry
# ".device/wheels" holding a transformers wheel that can (setup.sh installs it), made here with
#     .venv/bin/python -m pip download --no-deps --only-binary=:all: -d .device/wheels \
#         "transformers==$(.venv/bin/python -c 'import transformers; print(transformers.__version__)')"
# The tests include the tile-skipping ones (skipped and uniform tiles, rows without any group sent to plain
# attention); `proxy` (not in the default parts: no GPU needed) also writes the CPU proxy JSON of the kernels
# (benchmarks/syntax_bert_kernel_proxy.py --compile: glue, sweeps, tiles skipped, sm_90 registers / instructions).
# Parts (default: all, in this order, each skipped when the time budget is spent): tests minilm bert-base others,
# e.g. `bash experiments/device/kernel_checks.sh bert-base` in a second call.
source experiments/device/setup.sh
BUDGET=${KERNEL_CHECKS_BUDGET:-330}  # seconds for everything after setup; the call's limit is 360
START=$SECONDS
left() { echo $(( BUDGET - (SECONDS - START) )); }
PARTS=${*:-tests minilm bert-base others}
mkdir -p "$OUT/gpu"
{
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
    python3 -c "import torch, transformers, triton; print('torch', torch.__version__, 'transformers', transformers.__version__, 'triton', triton.__version__, torch.cuda.get_device_name())"
} 2>&1 | tee "$OUT/gpu/env.txt"
export SYNTAXFORMER_DATA=.device/testdata SYNTAXFORMER_TEST_PARSER=jsonl:.device/testdata/parses.jsonl \
    SYNTAXFORMER_CACHE=/tmp/sft
PYTEST="python3 -m pytest -p no:cacheprovider -o addopts= -q -rs"

bench() {  # bench NAME ARGS...: one benchmark run, its JSON in $OUT/gpu/NAME.json
    local name=$1 t
    shift
    t=$(left)
    if [ "$t" -lt 30 ]; then echo "skipped $name: time budget spent" | tee -a "$OUT/gpu/skipped.txt"; return; fi
    [ "$t" -gt 120 ] && t=120
    echo "== $name ($t s at most)"
    timeout "$t" python3 benchmarks/syntax_bert_attention.py --device cuda --quick --no-rss "$@" \
        --out "$OUT/gpu/$name.json" > /dev/null 2> "$OUT/gpu/$name.log" || echo "$name: exit $?"
    [ -f "$OUT/gpu/$name.json" ] && python3 - "$OUT/gpu/$name.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
for L, r in d["lengths"].items():
    lay, mod = r["layer"], r["model"]
    print(f"  L={L}: layer " + ", ".join(f"{k} {v}" for k, v in lay.items() if k.endswith("_over_vanilla")))
    print(f"  L={L}: model " + ", ".join(f"{k} {v}" for k, v in mod.items() if k.endswith("_over_vanilla")))
EOF
}

for part in $PARTS; do
    case $part in
    tests)
        echo "== gpu tests of the fused kernels"
        timeout $(( $(left) < 180 ? $(left) : 180 )) $PYTEST -m gpu tests/modeling/test_syntax_attention_triton.py \
            2>&1 | tee "$OUT/gpu/gpu_tests_triton.log" | tail -15 ;;
    minilm|bert-base)
        shape=$part; tag=${part/-/}
        impls=fast,triton
        bench "${tag}_b8_l128_fp32" --shape "$shape" --implementations "$impls" --batch 8 --length 128
        bench "${tag}_b64_l128_bf16" --shape "$shape" --implementations "$impls" --batch 64 --length 128 --autocast bf16
        bench "${tag}_b8_l512_bf16" --shape "$shape" --implementations "$impls" --batch 8 --length 512 --autocast bf16
        bench "${tag}_b32_l512_bf16" --shape "$shape" --implementations "$impls" --batch 32 --length 512 --autocast bf16 ;;
    others)
        t=$(left)
        if [ "$t" -lt 30 ]; then echo "skipped the other gpu tests: time budget spent" | tee -a "$OUT/gpu/skipped.txt"
        else
            echo "== the other gpu tests ($t s at most)"
            timeout "$t" $PYTEST -m gpu --continue-on-collection-errors tests/ \
                --ignore=tests/modeling/test_syntax_attention_triton.py 2>&1 | tee "$OUT/gpu/gpu_tests_others.log" | tail -8
        fi ;;
    proxy)
        echo "== kernel proxy (CPU; 2 minutes at most)"
        timeout $(( $(left) < 120 ? $(left) : 120 )) env TRITON_INTERPRET=1 python3 benchmarks/syntax_bert_kernel_proxy.py \
            --compile --out "$OUT/gpu/kernel_proxy.json" 2> "$OUT/gpu/kernel_proxy.log" | tail -c 400 ;;
    *) echo "unknown part $part (tests, minilm, bert-base, others, proxy)"; exit 2 ;;
    esac
done
echo "done in $(( SECONDS - START )) s; files in \$OUT/gpu: $(ls "$OUT/gpu" | tr '\n' ' ')"
