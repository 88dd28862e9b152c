"""Proxy benchmark of Syntax-BERT's ``implementation="triton"``: what the CPU can measure about its GPU cost.

Run from the repository root (about a minute on 2 cores; no GPU, triton installed)::

    python benchmarks/syntax_bert_kernel_proxy.py [--shapes 8x128 32x512] [--out FILE]

Per shape ``BxL`` (BERT-base heads: 12 x 64; the attention benchmark's batch of UD EWT dev passages with their real
dependency and constituency trees, D = 15), one layer's attention forward + backward runs on the CPU with the
Triton kernels (the four sweeps, and the four small kernels of the table algebra, which count as glue) replaced by
no-ops, as a later layer of a forward (the groups' per-forward memo warm):

* ``glue_ops`` / ``glue_gb``: the PyTorch ops around the kernels (views excluded), each a separate kernel launch on
  a GPU, and the bytes they read and write (inputs: storage bytes, at most their elements; outputs: their
  elements), forward + backward (``glue`` splits them by direction);
* ``sweeps_fwd`` / ``sweeps_bwd``: kernel launches per direction, each a sweep over the ``L x L`` pairs;
* ``tiles_skipped``: the fraction of 64 x 64 (query, key) tiles the kernels skip (their descriptors, from
  ``tile_descriptors``), beside ``tiles_without_relation``, the fraction in which no allowed pair has a group of
  either tree; ``tiles_uniform``: computed tiles with one joint bucket per row (the per-row path);
  ``plain_rows``: the fraction of rows without any group (plain attention, outside the kernels).

``kernels`` counts, per kernel, the matrix products, exponentials and loads in its source (per tile iteration, as
written; loops over buckets count once); ``per_pair`` sums them per direction (sweeps, matrix products,
exponentials of score tiles, gathers from the per-bucket tables). With ``--compile``, ``compiled`` holds registers,
spills and machine instructions per pair per kernel from compiling for sm_90 without a GPU (Triton's bundled
ptxas and nvdisasm; ``experiments/triton_compile_report.py``). The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import collections
import inspect
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

os.environ["TRITON_INTERPRET"] = "1"  # the triton path then accepts CPU tensors; its kernels are stubbed below

import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

HEADS, HEAD_SIZE, TILE = 12, 64, 64
KERNELS = ("prepass_sum_kernel", "attn_fwd_kernel", "attn_bwd_rows_kernel", "bwd_cols_kernel")
#: The small kernels of the table algebra between the sweeps (per row of the ``[B, H, L, J]`` tables): glue, one op
#: each, their tensors' bytes read or written once.
GLUE_KERNELS = ("group_lse_kernel", "group_lse_bwd_kernel", "group_bias_kernel", "group_bias_bwd_kernel")
#: Ops that move no data (views, metadata, allocations without a fill).
FREE = {
    "view", "_unsafe_view", "expand", "transpose", "t", "permute", "unsqueeze", "squeeze", "slice", "select",
    "alias", "as_strided", "detach", "unbind", "split", "split_with_sizes", "chunk", "lift_fresh", "view_as",
    "_reshape_alias", "unfold", "diagonal", "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided",
    "is_same_size", "sym_size", "sym_stride", "sym_numel", "set", "_local_scalar_dense", "item", "dim", "size",
    "stride", "numel", "is_nonzero", "equal",
}  # fmt: skip


def _tensors(x: Any):
    if isinstance(x, torch.Tensor):
        yield x
    elif isinstance(x, (list, tuple)):
        for y in x:
            yield from _tensors(y)
    elif isinstance(x, dict):
        for y in x.values():
            yield from _tensors(y)


def _read_bytes(t: torch.Tensor) -> int:
    return min(t.untyped_storage().nbytes(), t.numel() * t.element_size())


class _OpLog(TorchDispatchMode):
    """Every aten op that moves data, with the bytes it reads and writes, by direction (``phase``)."""

    def __init__(self) -> None:
        super().__init__()
        self.phase = "forward"
        self.ops: list[tuple[str, str, int]] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = func.overloadpacket.__name__.rstrip("_")
        if name not in FREE:
            moved = sum(_read_bytes(t) for t in _tensors((args, kwargs)))
            moved += sum(t.numel() * t.element_size() for t in _tensors(out))
            self.ops.append((self.phase, name, moved))
        return out


class _NoKernel:
    """A kernel that does nothing, counting its launches per direction (``glue``: as one op of ``ops``, moving the
    bytes of its tensor arguments once)."""

    def __init__(self, log: collections.Counter, phase: list[str], glue: _OpLog | None = None, name: str = "") -> None:
        self.log, self.phase, self.glue, self.name = log, phase, glue, name

    def __getitem__(self, grid: Any):
        def launch(*args: Any, **kwargs: Any) -> None:
            if self.glue is None:
                self.log[self.phase[0]] += 1
            else:
                moved = sum(t.numel() * t.element_size() for t in {id(t): t for t in _tensors(args)}.values())
                self.glue.ops.append((self.phase[0], self.name, moved))

        return launch


def kernel_source_counts() -> dict[str, dict[str, int]]:
    """Per kernel, matrix products, exponentials and loads in its source (the shared helpers ``score_tile``: one
    product and one load; ``load_tile``, ``tile_descriptor``: one load)."""
    from syntaxformer.modeling import syntax_attention_triton_backward as bwd
    from syntaxformer.modeling import syntax_attention_triton_forward as fwd

    out = {}
    for name in KERNELS:
        kernel = getattr(fwd, name, None) or getattr(bwd, name)
        src = inspect.getsource(getattr(kernel, "fn", kernel))
        out[name] = {
            "matmuls": len(re.findall(r"\b(?:tl\.dot|score_tile)\(", src)),
            "exps": len(re.findall(r"tl\.exp2?\(", src)),
            "loads": len(re.findall(r"\b(?:tl\.load|load_tile|score_tile|tile_descriptor)\(", src)),
        }
    return out


def per_pair_counts() -> dict[str, dict[str, int]]:
    """Per direction, the matrix products, exponentials and per-pair table gathers each (query, key) pair costs,
    summed over the kernels of that direction, from the sources (a skipped tile costs none)."""
    direction = {"prepass_sum_kernel": "forward", "attn_fwd_kernel": "forward"}
    out: dict[str, dict[str, int]] = {
        d: {"sweeps": 0, "matmuls": 0, "exps": 0, "gathers": 0} for d in ("forward", "backward")
    }
    from syntaxformer.modeling import syntax_attention_triton_backward as bwd
    from syntaxformer.modeling import syntax_attention_triton_forward as fwd

    for name in KERNELS:
        kernel = getattr(fwd, name, None) or getattr(bwd, name)
        src = inspect.getsource(getattr(kernel, "fn", kernel))
        row = out[direction.get(name, "backward")]
        row["sweeps"] += 1
        row["matmuls"] += len(re.findall(r"\b(?:tl\.dot|score_tile)\(", src))  # score_tile: QKᵀ
        # per-pair exponentials: those of [BM, BN] tiles (not the per-bucket rescaling of [BM, JP] tables)
        row["exps"] += len(re.findall(r"tl\.exp2?\((?!mx - |m - )", src))
        row["gathers"] += len(re.findall(r"tl\.load\([A-Z]+ \+ (?:[^,]*\bjj\b|tab\b)", src))
    return out


def compiled(run: bool) -> dict | str:
    """The compile report at bf16, head size 64 (a subprocess: the report needs the compiler, the proxy runs under
    the interpreter), or how to get it."""
    command = [sys.executable, str(ROOT / "experiments" / "triton_compile_report.py"), "--configs", "bfloat16_d64"]
    if not run:
        return "--compile, or PYTHONPATH=src python experiments/triton_compile_report.py (ptxas, sm_90, no GPU)"
    env = {**os.environ, "TRITON_INTERPRET": "0", "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(B: int, L: int) -> dict:
    """The proxy figures of one layer at ``B x L`` (see the module docstring)."""
    import syntax_bert_attention as bench

    from syntaxformer.masks import relation_groups_from_features
    from syntaxformer.modeling import syntax_attention_triton as T
    from syntaxformer.modeling.syntax_attention import syntax_attention_forward
    from syntaxformer.modeling.syntax_attention_core import SyntaxAttentionOptions, TopicalAttention, prepare_groups

    torch.manual_seed(0)
    batch = bench._batch(B, L)
    dep, con = relation_groups_from_features(batch, 15)
    groups = prepare_groups([dep, con], 3 * 15 + 2)
    allowed = batch["attention_mask"].bool()[:, None, :].expand(B, L, L)
    mask = allowed.unsqueeze(1)
    H, d = HEADS, HEAD_SIZE
    topical = TopicalAttention(1, H * d)
    topical.bind([(nn.Linear(H * d, H * d), nn.Linear(H * d, H * d))])
    with torch.no_grad():
        topical.query.normal_(0, 1.0)

    class Layer(nn.Module):
        layer_idx = 0

    launches: collections.Counter = collections.Counter()
    phase = ["forward"]
    log = _OpLog()
    saved = {name: getattr(T, name) for name in KERNELS + GLUE_KERNELS}
    for name in KERNELS:
        setattr(T, name, _NoKernel(launches, phase))
    for name in GLUE_KERNELS:
        setattr(T, name, _NoKernel(launches, phase, log, name))
    try:
        for measured in (False, True):  # the second call is a later layer: the groups' memo is warm
            q, k, v = (torch.randn(B, H, L, d).requires_grad_() for _ in range(3))
            launches.clear()
            phase[0] = log.phase = "forward"
            log.ops.clear()
            with log if measured else torch.no_grad():
                out, _ = syntax_attention_forward(
                    Layer(),
                    q,
                    k,
                    v,
                    mask,
                    syntax_groups=groups,
                    syntax_topical=topical,
                    syntax_options=SyntaxAttentionOptions(implementation="triton"),
                )
                if measured:
                    phase[0] = log.phase = "backward"
                    out.float().sum().backward()
    finally:
        for name, kernel in saved.items():
            setattr(T, name, kernel)
    glue = {
        p: {"ops": sum(1 for o in log.ops if o[0] == p), "gb": round(sum(o[2] for o in log.ops if o[0] == p) / 1e9, 3)}
        for p in ("forward", "backward")
    }
    related = ((dep > 0) | (con > 0)) & allowed  # (B, L, L)
    n = -(-L // TILE)
    padded = torch.zeros(B, n * TILE, n * TILE, dtype=torch.bool)
    padded[:, :L, :L] = related
    tiles = padded.view(B, n, TILE, n, TILE).any(4).any(2)  # (B, n, n): a tile holds a related pair
    # the descriptors the kernels read, at 64 x 64, as the layer asked for them (skipping allowed or not)
    asked = {k[3] for k in groups.cache if isinstance(k, tuple) and k[0] == "tiles"}
    assert len(asked) == 1, asked
    joint = groups.cache["pairs"][1]
    desc = T.tile_descriptors(groups, joint, allowed, TILE, TILE, asked.pop())
    skipped = (desc & T.SKIP).bool()
    plain = ~torch.cat(groups.cache[False][1], -1).any(-1)  # (B, L) rows without any group
    return {
        "glue_ops": glue["forward"]["ops"] + glue["backward"]["ops"],
        "glue_gb": round(glue["forward"]["gb"] + glue["backward"]["gb"], 3),
        "glue": glue,
        "sweeps_fwd": launches["forward"],
        "sweeps_bwd": launches["backward"],
        "tiles_skipped": round(skipped.float().mean().item(), 3),
        "tiles_uniform": round(((desc & T.UNIFORM).bool() & ~skipped).float().mean().item(), 3),
        "plain_rows": round(plain.float().mean().item(), 3),
        "tiles_without_relation": round(1.0 - tiles.float().mean().item(), 3),
        "top_glue_ops": collections.Counter(o[1] for o in log.ops).most_common(6),
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shapes", nargs="+", default=["8x128", "32x512"], help="BxL shapes (default 8x128 32x512)")
    parser.add_argument("--out", type=Path, default=None, help="also write the JSON to this new file")
    parser.add_argument(
        "--compile",
        action="store_true",
        help="also compile the kernels for sm_90 (bf16, head size 64; no GPU needed, a few minutes): registers, "
        "spills and machine instructions per pair (experiments/triton_compile_report.py)",
    )
    args = parser.parse_args(argv)
    if args.out is not None and args.out.exists():
        parser.error(f"--out {args.out} exists; choose a new file (results are never overwritten)")
    try:
        import triton
    except ImportError:
        parser.error("the proxy reads the Triton path: install triton (the dev extra)")
    torch.set_num_threads(1)
    shapes = {}
    for shape in args.shapes:
        B, L = (int(x) for x in shape.split("x"))
        shapes[shape] = measure(B, L)
        print(json.dumps({"shape": shape, **shapes[shape]}), file=sys.stderr, flush=True)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT)
    result = {
        "benchmark": "syntax_bert_kernel_proxy",
        "command": " ".join(["python", "benchmarks/syntax_bert_kernel_proxy.py", *(argv or sys.argv[1:])]),
        "commit": commit.stdout.strip() or None,
        "torch": torch.__version__,
        "triton": triton.__version__,
        "heads": HEADS,
        "head_size": HEAD_SIZE,
        "tile": TILE,
        "shapes": shapes,
        "kernels": kernel_source_counts(),
        "per_pair": per_pair_counts(),
        "compiled": compiled(args.compile),
    }
    text = json.dumps(result)
    if args.out is not None:
        tmp = args.out.with_name(args.out.name + ".tmp")
        tmp.write_text(text + "\n")
        tmp.rename(args.out)  # atomic: a reader never sees half a file
    print(text)
    return result


if __name__ == "__main__":
    main()
