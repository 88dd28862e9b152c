"""Benchmark: the Syntax-BERT attention (``attn_implementation="syntax"``) against vanilla attention.

Run from the repository root::

    python benchmarks/syntax_bert_attention.py [--quick] [--batch 8] [--length 128 [256 512 ...]]
        [--implementations fast,exact,triton] [--device cpu|cuda] [--autocast bf16]
        [--shape minilm|bert-base] [--out FILE]

Inputs: batch 8 x 128 positions (``--batch``, ``--length``; several lengths run one after the other) packed from
real UD English-EWT dev sentences (``$SYNTAXFORMER_DATA/ud_ewt/en_ewt-ud-dev.conllu``, else
``../shared/data/...``; seeded random trees if absent; the same passages as ``benchmarks/mask_build.py``),
dependency + constituency relation groups with D = 15 (M = 90 sub-networks), random token ids.

0. **Group preparation**: relation groups of both partitions plus :func:`prepare_groups`, ms per example.
1. **One layer**, forward + backward, MiniLM's shape (hidden 384, 12 heads, FFN 1536; ``--shape bert-base``:
   hidden 768, 12 heads, FFN 3072), training mode: a
   ``BertLayer`` with transformers' default SDPA attention (vanilla) against the same layer with the syntax
   attention — ``fast`` (default) and ``exact`` (autograd, per-group maximum; the library's slow path), and with
   ``--implementations ...,triton`` the fused Triton kernels (CUDA only:
   on the CPU they run only in Triton's interpreter, whose timings say nothing about speed). Interleaved repeats,
   median times, ratios to vanilla, tokens/s. Each implementation's output and input gradient are checked against
   the exact path in the same run (the slow loop over the sub-networks is tested in ``tests/``, not timed here).
2. **Whole model training step** (forward, loss, backward, AdamW step) of
   ``SyntaxBertForSequenceClassification.from_encoder_pretrained(MiniLM)`` against vanilla
   ``AutoModelForSequenceClassification`` (MiniLM, SDPA) on the same batch; relation groups are built inside the
   syntax step. ``--shape bert-base``: both models with a random BERT-base encoder (hidden 768, 12 heads,
   12 layers; random weights: timings do not depend on them). Interleaved, medians. Memory: bytes saved for
   backward by one forward (exact, from autograd's saved-tensor hooks, unique storages) and the peak RSS growth of
   a training step, each variant in a fresh process.

**Two baselines.** With the checkpoint's attention dropout (0.1) the plain layer's SDPA call runs the math path
on the CPU, which materialises the attention matrix as the syntax attention does; without dropout it runs a fused
(flash) kernel, which is what a GPU runs with or without dropout. So the layer and the model step are timed twice,
each variant with the same dropout as its baseline: ``layer`` / ``model`` with the checkpoint's dropout and
``layer_no_dropout`` / ``model_no_dropout`` without; each layer result names the SDPA backend the plain layer ran
(``sdpa_backend``, from ``torch._fused_sdp_choice``). With ``triton`` among the implementations only the
no-dropout runs happen (the kernels have no dropout), as ``layer`` / ``model``; the JSON says
``attention_dropout``. With ``triton`` the whole-model step also times a ``syntax_triton`` model.

``--device cuda``: every timed call is wrapped in ``torch.cuda.synchronize()``; the first call of each variant
(warm-up: kernel compilation) is reported separately as ``first_call_ms`` and never enters
the medians; peak CUDA memory of one layer forward + backward and of one model training step per variant (above
what is allocated before it); no RSS child processes. ``--quick``
keeps the GPU run to a few repeats (lengths 128 and 512, batch 8: about a minute on one GPU plus the compiles).
On the CPU ``--quick`` (5 layer repeats, 3 model steps, no RSS child processes) takes under a minute at the
default batch 8 x 128.
``--autocast bf16`` runs every forward under ``torch.autocast(dtype=torch.bfloat16)``.

1 torch thread by default (stable on a shared machine). The last line printed is one JSON object (with the command
that made it and the device); ``--out FILE`` also writes it there (a new file: never overwritten).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]


def _ud_dev() -> Path:
    """UD English-EWT dev: under ``$SYNTAXFORMER_DATA`` when set, else the mask benchmark's default path."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from mask_build import UD_DEV

    data = os.environ.get("SYNTAXFORMER_DATA")
    return Path(data) / "ud_ewt" / "en_ewt-ud-dev.conllu" if data else UD_DEV


def _batch(n: int, length: int, seed: int = 0) -> dict[str, torch.Tensor]:
    """A SyntaxCollator batch of ``n`` real-tree passages of ``length`` positions, random token ids."""
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from mask_build import _passages, _read_sentences  # same inputs as the mask benchmark

    from syntaxformer.data.collate import SyntaxCollator

    path = _ud_dev()
    if path.exists():
        from syntaxformer.data.readers.conllu import read_conllu

        sentences = [(s.words, s.heads) for _, s in zip(range(2001), read_conllu(path))]
    else:
        sentences, _ = _read_sentences(path, 2001)  # seeded random trees
    examples = _passages(sentences, n, length)
    batch = SyntaxCollator(pad_token_id=0)(examples)
    g = torch.Generator().manual_seed(seed)
    batch["input_ids"] = torch.randint(1000, 20000, batch["input_ids"].shape, generator=g)
    batch["token_type_ids"] = torch.zeros_like(batch["input_ids"])
    batch["labels"] = torch.randint(0, 2, (n,), generator=g)
    return batch


#: Set by ``main``: the device every tensor lives on and the autocast dtype (None: fp32).
DEVICE = torch.device("cpu")
AUTOCAST: torch.dtype | None = None

#: ``--shape``: the encoder whose layer and model are timed. ``minilm``: the MiniLM checkpoint (its weights);
#: ``bert-base``: BERT-base's dimensions with random weights.
SHAPES = {
    "minilm": None,
    "bert-base": dict(hidden_size=768, num_attention_heads=12, num_hidden_layers=12, intermediate_size=3072),
}
SHAPE = "minilm"


def _encoder_config():
    """The config of the timed encoder (``SHAPE``)."""
    from transformers import AutoConfig, BertConfig

    from syntaxformer.defaults import default_hf_model

    if SHAPES[SHAPE] is None:
        return AutoConfig.from_pretrained(default_hf_model())
    return BertConfig(vocab_size=30522, **SHAPES[SHAPE])


def _sync() -> None:
    if DEVICE.type == "cuda":
        torch.cuda.synchronize()


def _autocast() -> contextlib.AbstractContextManager:
    return torch.autocast(DEVICE.type, dtype=AUTOCAST) if AUTOCAST is not None else contextlib.nullcontext()


def _interleaved(
    fns: dict[str, Callable[[], object]], repeats: int, warmup: int = 1, first: dict[str, float] | None = None
) -> dict[str, float]:
    """Median seconds per call of each function, calls interleaved round-robin (synchronised on CUDA); the
    seconds of each function's first (warm-up) call go into ``first`` when given."""
    for i in range(warmup):
        for k, f in fns.items():
            _sync()
            t = time.perf_counter()
            f()
            _sync()
            if i == 0 and first is not None:
                first[k] = time.perf_counter() - t
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeats):
        for k, f in fns.items():
            _sync()
            t = time.perf_counter()
            f()
            _sync()
            times[k].append(time.perf_counter() - t)
    return {k: statistics.median(v) for k, v in times.items()}


def _saved_bytes(fn: Callable[[], torch.Tensor]) -> int:
    """Bytes of the unique storages autograd saves for backward during ``fn()`` (activation memory; the triton
    variant's autograd functions save through the same hooks)."""
    seen: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        s = t.untyped_storage()
        seen[s.data_ptr()] = s.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = fn()
    del out
    return sum(seen.values())


# ---------------------------------------------------------------------------------------------------------------
# 1. one layer
# ---------------------------------------------------------------------------------------------------------------


def bench_groups(batch: dict[str, torch.Tensor], repeats: int) -> dict:
    """Median ms per example to build both partitions' relation groups and prepare them for the layers."""
    from syntaxformer.masks import relation_groups_from_features
    from syntaxformer.modeling.syntax_attention_core import prepare_groups

    def build() -> None:
        prepare_groups(list(relation_groups_from_features(batch, 15)), 3 * 15 + 2)

    t = _interleaved({"groups": build}, repeats)
    return {"groups_ms_per_example": round(t["groups"] * 1e3 / batch["input_ids"].shape[0], 3)}


def bench_layer(
    batch: dict[str, torch.Tensor],
    repeats: int,
    impls: tuple[str, ...] = ("fast", "exact"),
    attention_dropout: float | None = None,
) -> dict:
    from transformers.models.bert.modeling_bert import BertLayer

    from syntaxformer.masks import relation_groups_from_features
    from syntaxformer.modeling.syntax_attention_core import SyntaxAttentionOptions, TopicalAttention, prepare_groups

    torch.manual_seed(0)
    base = _encoder_config()

    def layer(impl: str) -> BertLayer:
        cfg = _encoder_config()
        cfg._attn_implementation = impl
        if attention_dropout is not None:
            cfg.attention_probs_dropout_prob = attention_dropout
        return BertLayer(cfg, layer_idx=0).to(DEVICE).train()

    vanilla, syntax = layer("sdpa"), layer("syntax")
    syntax.load_state_dict(vanilla.state_dict())
    dropout_p = base.attention_probs_dropout_prob if attention_dropout is None else attention_dropout
    topical = TopicalAttention(1, base.hidden_size, base.hidden_size).to(DEVICE)
    topical.bind([(syntax.attention.self.key, syntax.attention.output.dense)])
    with torch.no_grad():
        topical.query.normal_(0, 1.0)
    dep, con = relation_groups_from_features(batch, 15)
    groups = prepare_groups([dep, con], 3 * 15 + 2)
    B, L = batch["input_ids"].shape
    x = torch.randn(B, L, base.hidden_size).to(DEVICE).requires_grad_()
    mask = batch["attention_mask"].bool()[:, None, None, :].expand(B, 1, L, L)
    n_groups = sum(len(torch.unique(g)) - 1 for g in (dep, con))  # distinct group ids present (info)

    def forward(impl: str | None) -> torch.Tensor:
        with _autocast():
            if impl is None:
                return vanilla(x, mask)
            return syntax(
                x,
                mask,
                syntax_groups=groups,
                syntax_topical=topical,
                syntax_options=SyntaxAttentionOptions(implementation=impl),
            )

    def run(impl: str | None) -> torch.Tensor:
        y = forward(impl)
        y.float().sum().backward()
        return y

    # same dropout draws are impossible across implementations: check equality in eval mode (output and dx)
    syntax.eval()
    got = {}
    for impl in dict.fromkeys(("exact",) + impls):
        x.grad = None
        y = forward(impl).float()
        (y * torch.linspace(-1, 1, y.shape[-1], device=DEVICE)).sum().backward()
        got[impl] = (y.detach(), x.grad.clone())
    diffs = {
        impl: max(float((a - b).abs().max()) for a, b in zip(got[impl], got["exact"]))
        for impl in impls
        if impl != "exact"
    }
    del got
    syntax.train()

    variants = {"vanilla": None, **{impl: impl for impl in impls}}
    first: dict[str, float] = {}
    t = _interleaved({k: (lambda impl=impl: run(impl)) for k, impl in variants.items()}, repeats, first=first)
    mem = {k: _saved_bytes(lambda impl=impl: forward(impl)) for k, impl in variants.items()}
    out = {
        "attention_dropout": dropout_p,
        "sdpa_backend": _sdpa_backend(
            B, base.num_attention_heads, L, base.hidden_size // base.num_attention_heads, mask, dropout_p
        ),
        "shape": {
            "batch": B,
            "length": L,
            "hidden": base.hidden_size,
            "heads": base.num_attention_heads,
            "sub_networks": 2 * 45,
            "sub_networks_present": n_groups,
        },
        "ms": {k: round(v * 1e3, 2) for k, v in t.items()},
        **{f"{impl}_over_vanilla": round(t[impl] / t["vanilla"], 3) for impl in impls},
        "tokens_per_s": {k: round(B * L / v) for k, v in t.items()},
        "saved_for_backward_mb": {k: None if v is None else round(v / 2**20, 1) for k, v in mem.items()},
        **{
            f"saved_{impl}_over_vanilla": round(mem[impl] / mem["vanilla"], 3)
            for impl in impls
            if mem[impl] is not None
        },
        **{f"{impl}_vs_exact_max_abs_diff": d for impl, d in diffs.items()},
    }
    if DEVICE.type == "cuda":
        out["first_call_ms"] = {k: round(v * 1e3, 1) for k, v in first.items()}
        peak = {}
        for k, impl in variants.items():
            x.grad = None
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            before = torch.cuda.memory_allocated()
            run(impl)
            torch.cuda.synchronize()
            peak[k] = round((torch.cuda.max_memory_allocated() - before) / 2**20, 1)
        out["peak_cuda_mb"] = peak
        out.update({f"peak_{impl}_over_vanilla": round(peak[impl] / peak["vanilla"], 3) for impl in impls})
    return out


def _sdpa_backend(B: int, H: int, L: int, d: int, mask: torch.Tensor, dropout: float) -> str:
    """The backend torch's SDPA picks for the plain layer's call (``MATH`` materialises the attention matrix, as it
    does on the CPU with attention dropout; ``FLASH_ATTENTION`` / ``EFFICIENT_ATTENTION`` / ``CUDNN_ATTENTION`` do
    not): ``torch._fused_sdp_choice`` on tensors of the layer's shape, dtype and device."""
    from torch.nn.attention import SDPBackend

    q = torch.empty(B, H, L, d, device=DEVICE, dtype=AUTOCAST or torch.float32)
    return SDPBackend(torch._fused_sdp_choice(q, q, q, mask, dropout, False)).name


# ---------------------------------------------------------------------------------------------------------------
# 2. whole model
# ---------------------------------------------------------------------------------------------------------------


#: Whole-model variants: ``syntax`` runs the default ``fast`` implementation, ``syntax_<impl>`` the others.
MODEL_KINDS = {"syntax": "fast", "syntax_triton": "triton"}


def _model(kind: str, attention_dropout: float | None = None):
    from transformers import AutoModelForSequenceClassification, BertForSequenceClassification

    from syntaxformer.defaults import default_hf_model
    from syntaxformer.modeling import SyntaxBertConfig, SyntaxBertForSequenceClassification

    torch.manual_seed(0)
    enc = {} if attention_dropout is None else {"attention_probs_dropout_prob": attention_dropout}
    random_weights = SHAPES[SHAPE] is not None
    if kind == "vanilla" and random_weights:
        cfg = _encoder_config()
        cfg.update({"num_labels": 2, **enc})
        cfg._attn_implementation = "sdpa"
        model = BertForSequenceClassification(cfg)
    elif kind == "vanilla":
        model = AutoModelForSequenceClassification.from_pretrained(default_hf_model(), num_labels=2, **enc)
    else:
        impl = MODEL_KINDS[kind]
        if random_weights:
            cfg = _encoder_config()
            cfg.update(enc)
            model = SyntaxBertForSequenceClassification(
                SyntaxBertConfig(encoder=cfg, num_labels=2, implementation=impl)
            )
        else:
            model = SyntaxBertForSequenceClassification.from_encoder_pretrained(
                default_hf_model(), encoder_kwargs=enc, num_labels=2, implementation=impl
            )
        with torch.no_grad():
            model.syntax_bert.topical.query.normal_(0, 1.0)  # a trained-looking query (not the zero init)
    model.to(DEVICE).train()
    return model


def _train_step(model, opt, batch: dict[str, torch.Tensor], kind: str) -> torch.Tensor:
    inputs = (
        batch
        if kind != "vanilla"
        else {k: batch[k] for k in ("input_ids", "attention_mask", "token_type_ids", "labels")}
    )
    with _autocast():
        loss = model(**inputs).loss
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    return loss


def bench_model(
    batch: dict[str, torch.Tensor], repeats: int, impls: tuple[str, ...] = (), attention_dropout: float | None = None
) -> dict:
    """Training steps of the vanilla model, the ``fast`` Syntax-BERT model and one per implementation of
    ``impls`` other than ``fast`` / ``exact`` (``triton``)."""
    extra = tuple(f"syntax_{impl}" for impl in impls if impl == "triton")
    kinds = ("vanilla", "syntax") + extra
    models = {k: _model(k, attention_dropout) for k in kinds}
    opts = {k: torch.optim.AdamW(m.parameters(), lr=1e-5) for k, m in models.items()}
    first: dict[str, float] = {}
    t = _interleaved({k: (lambda k=k: _train_step(models[k], opts[k], batch, k)) for k in models}, repeats, first=first)
    saved = {}
    for k, m in models.items():
        inputs = (
            batch
            if k != "vanilla"
            else {n: batch[n] for n in ("input_ids", "attention_mask", "token_type_ids", "labels")}
        )
        with _autocast():
            saved[k] = _saved_bytes(lambda m=m, inputs=inputs: m(**inputs).loss)
    B, L = batch["input_ids"].shape
    out = {
        "step_ms": {k: round(v * 1e3, 1) for k, v in t.items()},
        "step_syntax_over_vanilla": round(t["syntax"] / t["vanilla"], 3),
        "tokens_per_s": {k: round(B * L / v) for k, v in t.items()},
        "saved_for_backward_mb": {k: None if v is None else round(v / 2**20, 1) for k, v in saved.items()},
        "saved_syntax_over_vanilla": round(saved["syntax"] / saved["vanilla"], 3),
    }
    for k in extra:
        out[f"step_{k}_over_vanilla"] = round(t[k] / t["vanilla"], 3)
        if saved[k] is not None:
            out[f"saved_{k}_over_vanilla"] = round(saved[k] / saved["vanilla"], 3)
    if DEVICE.type == "cuda":
        out["first_call_ms"] = {k: round(v * 1e3, 1) for k, v in first.items()}
        peak = {}
        for k in models:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            before = torch.cuda.memory_allocated()
            _train_step(models[k], opts[k], batch, k)
            torch.cuda.synchronize()
            peak[k] = round((torch.cuda.max_memory_allocated() - before) / 2**20, 1)
        out["peak_cuda_mb"] = peak
        out.update({f"peak_{k}_over_vanilla": round(peak[k] / peak["vanilla"], 3) for k in models if k != "vanilla"})
    return out


def _rss_mb() -> float:
    """Current resident set size of this process (Linux ``/proc/self/statm``), MiB."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20


def _rss_child(kind: str, n: int, length: int, steps: int, threads: int) -> dict:
    """Peak RSS growth (MiB) during the first ``steps`` training steps (activations, gradients, optimizer state),
    sampled every millisecond, above the footprint after loading the model and the batch; in a fresh process."""
    import threading

    torch.set_num_threads(threads)
    batch = _batch(n, length)
    model = _model(kind)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5)
    base = _rss_mb()
    peak = [base]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], _rss_mb())
            time.sleep(0.001)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    for _ in range(steps):
        _train_step(model, opt, batch, kind)
    done.set()
    thread.join()
    return {"kind": kind, "base_rss_mb": round(base, 1), "peak_rss_growth_mb": round(peak[0] - base, 1)}


def bench_rss(n: int, length: int, steps: int, threads: int) -> dict:
    out = {}
    for kind in ("vanilla", "syntax"):
        cmd = [
            sys.executable,
            __file__,
            "--rss-child",
            kind,
            "--batch",
            str(n),
            "--length",
            str(length),
            "--threads",
            str(threads),
            "--steps",
            str(steps),
        ]
        res = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, check=True)
        out[kind] = json.loads(res.stdout.strip().splitlines()[-1])
    growth = {k: v["peak_rss_growth_mb"] for k, v in out.items()}
    return {
        "peak_rss_growth_mb": growth,
        "peak_rss_growth_syntax_minus_vanilla_mb": round(growth["syntax"] - growth["vanilla"], 1),
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="fewer repeats, no RSS processes (< 1 minute per length at 8 x 128)"
    )
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--length", type=int, nargs="+", default=[128], help="one or more sequence lengths")
    parser.add_argument(
        "--threads", type=int, default=1, help="torch CPU threads (default 1: stable timings on a shared machine)"
    )
    parser.add_argument("--no-rss", action="store_true", help="skip the peak-RSS child processes")
    parser.add_argument("--model-only", action="store_true", help="only the whole-model training step")
    parser.add_argument(
        "--model-repeats", type=int, default=None, help="timed whole-model steps per variant (default 3 quick, 7 full)"
    )
    parser.add_argument(
        "--implementations",
        default="fast,exact",
        help="comma-separated syntax implementations timed in the layer benchmark (fast, exact, triton;"
        " default fast,exact); with triton the model step also times a triton model",
    )
    parser.add_argument(
        "--shape",
        choices=sorted(SHAPES),
        default="minilm",
        help="minilm (the checkpoint) or bert-base (hidden 768, 12 heads, 12 layers, random weights)",
    )
    parser.add_argument("--out", type=Path, default=None, help="also write the JSON to this new file")
    parser.add_argument(
        "--device",
        default="cpu",
        choices=["cpu", "cuda"],
        help="where to run (cuda: synchronised timings, compile warm-up reported separately)",
    )
    parser.add_argument("--autocast", choices=["bf16"], default=None, help="run the forwards under bf16 autocast")
    parser.add_argument("--steps", type=int, default=2, help=argparse.SUPPRESS)
    parser.add_argument("--rss-child", choices=["vanilla", "syntax"], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.rss_child:
        result = _rss_child(args.rss_child, args.batch, args.length[0], args.steps, args.threads)
        print(json.dumps(result))
        return result
    torch.set_num_threads(args.threads)
    import transformers

    global DEVICE, AUTOCAST, SHAPE
    impls = tuple(x.strip() for x in args.implementations.split(",") if x.strip())
    bad = [x for x in impls if x not in ("fast", "exact", "triton")]
    if bad or not impls:
        parser.error(f"--implementations takes fast, exact and/or triton, got {args.implementations!r}")
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda but torch.cuda.is_available() is False")
    if "triton" in impls and args.device != "cuda":
        parser.error(
            "--implementations triton needs --device cuda (on the CPU the kernels run only in Triton's "
            "interpreter, whose timings say nothing about speed)"
        )
    if args.out is not None and args.out.exists():
        parser.error(f"--out {args.out} exists; choose a new file (results are never overwritten)")
    DEVICE = torch.device(args.device)
    AUTOCAST = torch.bfloat16 if args.autocast == "bf16" else None
    SHAPE = args.shape
    # The plain baseline with the checkpoint's attention dropout runs SDPA's math path on the CPU (it materialises
    # the attention matrix), without dropout a fused (flash) kernel: every ratio is reported against both, each
    # variant with the same dropout as its baseline. The Triton kernels have no attention dropout: none then.
    dropouts: tuple[float | None, ...] = (0.0,) if "triton" in impls else (None, 0.0)

    layer_reps, model_reps = (5, 3) if args.quick else (15, 7)
    model_reps = args.model_repeats or model_reps
    result = {
        "benchmark": "syntax_bert_attention",
        "command": " ".join(
            ["python", "benchmarks/syntax_bert_attention.py", *(sys.argv[1:] if argv is None else argv)]
        ),
        "shape": args.shape,
        "quick": args.quick,
        "threads": args.threads,
        "batch": args.batch,
        "device": args.device if args.device == "cpu" else torch.cuda.get_device_name(),
        "autocast": args.autocast,
        "implementations": list(impls),
        "attention_dropout": {
            "layer, model": "the checkpoint's (0.1)" if dropouts[0] is None else 0.0,
            "layer_no_dropout, model_no_dropout": 0.0,
        }
        if len(dropouts) == 2
        else {"layer, model": 0.0},
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "triton": _triton_version(),
        "commit": _commit(),
        "machine": platform.machine(),
        "data": str(_ud_dev()) if _ud_dev().exists() else "synthetic random trees (UD EWT dev not found)",
        "lengths": {},
    }
    for length in args.length:
        batch = {k: v.to(DEVICE) for k, v in _batch(args.batch, length).items()}
        res = {} if args.model_only else {"groups": bench_groups(batch, layer_reps)}
        for i, dropout in enumerate(dropouts):
            suffix = "_no_dropout" if i == 1 else ""
            if not args.model_only:
                res["layer" + suffix] = bench_layer(batch, layer_reps, impls, dropout)
            res["model" + suffix] = bench_model(batch, model_reps, impls, dropout)
        if not (args.no_rss or args.quick or args.model_only or DEVICE.type == "cuda"):
            res["memory_rss"] = bench_rss(args.batch, length, args.steps, args.threads)
        result["lengths"][str(length)] = res
        print(json.dumps({"length": length, **res}), file=sys.stderr, flush=True)
    text = json.dumps(result)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        tmp = args.out.with_name(args.out.name + ".tmp")
        tmp.write_text(text + "\n")
        tmp.rename(args.out)  # atomic: a reader never sees half a file
    print(text)
    return result


def _triton_version() -> str | None:
    try:
        import triton
    except ImportError:
        return None
    return triton.__version__


def _commit() -> str | None:
    """The checkout's commit (None where there is no git, e.g. a copied tree on a device machine)."""
    try:
        res = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return res.stdout.strip() or None


if __name__ == "__main__":
    main()
