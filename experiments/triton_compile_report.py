"""Compile every fused Syntax-BERT kernel (``syntaxformer.modeling.syntax_attention_triton``) for an NVIDIA GPU on a
machine without one, and report registers and spilled bytes per thread from ptxas (Triton's bundled copy).

This is how the per-kernel tile sizes (``_HALF_CONFIGS``) were chosen without a GPU: the largest tiles whose kernels
spill no register. It says nothing about speed. Run from the repository root (about a minute on 2 cores)::

    PYTHONPATH=src python experiments/triton_compile_report.py [--arch 90] [--joint-buckets 64]

Uses Triton's compiler internals (``ASTSource``, ``GPUTarget``), which move between releases; written against
Triton 3.9. Prints one JSON object: per (dtype, head size), per kernel the registers and spilled bytes per thread,
the tile and warps, and the machine instructions of each loop body (nvdisasm, bundled too) with the tile loop's
warp-instructions per (query, key) pair.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import tempfile

import torch

STRIDES = {"sqb", "sqh", "sql", "skb", "skh", "skl", "svb", "svh", "svl"}


def _report(ptx: str, arch: int) -> tuple[int, int]:
    """``(registers, spill-store bytes)`` of one kernel's PTX, from ptxas -v."""
    import triton

    bin_dir = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin")
    ptxas = next(p for p in (os.path.join(bin_dir, n) for n in ("ptxas-blackwell", "ptxas")) if os.path.exists(p))
    with tempfile.NamedTemporaryFile("w", suffix=".ptx", delete=False) as f:
        f.write(ptx)
    try:
        out = subprocess.run(
            [ptxas, "-v", "--gpu-name", f"sm_{arch}a", f.name, "-o", os.devnull],
            capture_output=True,
            text=True,
            check=True,
        ).stderr
    finally:
        os.unlink(f.name)
    regs = re.findall(r"Used (\d+) registers", out)
    spills = re.findall(r"(\d+) bytes spill stores", out)
    return int(regs[0]), int(spills[0]) if spills else 0


def _tool(name: str) -> str:
    import triton

    return os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", name)


def loop_instructions(cubin: bytes) -> list[int]:
    """Per loop of the kernel's machine code (SASS, from Triton's bundled nvdisasm), outermost first: the
    instructions in its body, those of the loops nested in it excluded. A loop is a backward branch; the body of a
    loop with branches inside (a skipped tile, a uniform tile) counts every path once."""
    with tempfile.NamedTemporaryFile("wb", suffix=".cubin", delete=False) as f:
        f.write(cubin)
    try:
        listing = subprocess.run([_tool("nvdisasm"), "-c", f.name], capture_output=True, text=True, check=True).stdout
    finally:
        os.unlink(f.name)
    labels: dict[str, int] = {}
    branches: list[tuple[int, str]] = []  # (instruction number, target label)
    n = 0
    for line in listing.splitlines():
        label = re.match(r"\s*(\.L_x_\d+):", line)
        if label:
            labels[label.group(1)] = n
            continue
        if re.match(r"\s*/\*[0-9a-f]+\*/\s+\S", line):
            target = re.search(r"BRA\b.*`\((\.L_x_\d+)\)", line)
            if target:
                branches.append((n, target.group(1)))
            n += 1
    # a branch to itself is the trap after EXIT, not a loop
    spans = sorted({(labels[t], i) for i, t in branches if t in labels and labels[t] < i}, key=lambda x: x[0] - x[1])
    out = []
    for lo, hi in spans:  # outermost (longest) first
        inner = [(a, b) for a, b in spans if lo <= a and b <= hi and (a, b) != (lo, hi)]
        out.append(sum(1 for k in range(lo, hi + 1) if not any(a <= k <= b for a, b in inner)))
    return out


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--arch", type=int, default=90, help="compute capability x 10 (90 = H100 / H200)")
    parser.add_argument("--joint-buckets", type=int, default=64, help="JP: joint buckets per row, a power of two")
    parser.add_argument("--only", nargs="+", default=None, help="compile only these kernels (e.g. bwd_cols)")
    parser.add_argument(
        "--configs", nargs="+", default=None, help="only these of bfloat16_d32 bfloat16_d64 float32_d32 float32_d64"
    )
    args = parser.parse_args(argv)
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from syntaxformer.modeling import syntax_attention_triton as T

    if T.INTERPRETED:
        parser.error("unset TRITON_INTERPRET: the interpreter's kernels cannot be compiled")
    kernels = {  # name: (kernel, pointer arguments, extra constexprs, has a JP table)
        "prepass_sum": (
            T.prepass_sum_kernel,
            ["Q", "K", "W", "IDX", "LZ", "Y", "SHIFT"],
            {"ONE_HOT": False, "HAS_W": True},
            True,
        ),
        "attn_fwd": (T.attn_fwd_kernel, ["Q", "K", "V", "IDX", "BIAS", "SHIFT", "O", "LSE", "W", "CTX"], {}, False),
        "attn_bwd_rows": (
            T.attn_bwd_rows_kernel,
            ["Q", "K", "V", "IDX", "BIAS", "SHIFT", "LSE", "DCTX", "OUT", "W", "DO", "DELTA", "DW", "DQ", "DB"],
            {"ONE_HOT": False},
            True,
        ),
        "bwd_cols": (
            T.bwd_cols_kernel,
            ["Q", "K", "V", "W", "IDX", "BIAS", "LZ", "SHIFT", "LSE", "DO", "DELTA", "A", "DY", "DQ", "DK", "DV", "DW"],
            {"HAS_W": True},
            False,
        ),
    }
    target = GPUTarget("cuda", args.arch, 32)
    result = {"triton": triton.__version__, "arch": args.arch, "joint_buckets": args.joint_buckets, "kernels": {}}
    for dtype, d in ((torch.bfloat16, 32), (torch.bfloat16, 64), (torch.float32, 32), (torch.float32, 64)):
        config = f"{str(dtype).removeprefix('torch.')}_d{d}"
        if args.configs is not None and config not in args.configs:
            continue
        ptr = "*fp32" if dtype == torch.float32 else "*bf16"
        types = {**dict.fromkeys(["Q", "K", "V", "O", "CTX", "DCTX", "OUT"], ptr), "IDX": "*i8", "DESC": "*i8"}
        row = {}
        for name, (fn, ptrs, extra, has_jp) in kernels.items():
            if args.only is not None and name not in args.only:
                continue
            BM, BN, BD, launch = T._config(name, d, dtype)
            consts = {**extra, "BM": BM, "BN": BN, "BD": BD, "D": BD, "PREC": "ieee"}
            consts.update(dict.fromkeys(["sqd", "skd", "svd", "sgd"], 1))  # unit strides of the head dimension
            if has_jp:
                consts["JP"] = args.joint_buckets
            consts = {k: v for k, v in consts.items() if k in fn.arg_names}
            sig = {}
            for n in fn.arg_names:
                if n in consts:
                    sig[n] = "constexpr"
                elif n in ptrs or n == "DESC":
                    sig[n] = types.get(n, "*fp32")
                elif n == "scale":
                    sig[n] = "fp32"
                else:  # strides, H, L, J
                    sig[n] = "i32"
            compiled = triton.compile(ASTSource(fn=fn, signature=sig, constexprs=consts), target=target, options=launch)
            loops = loop_instructions(compiled.asm["cubin"])
            per_pair = round(loops[0] * launch["num_warps"] / (BM * BN), 2) if loops else None
            regs, spill = _report(compiled.asm["ptx"], args.arch)
            row[name] = {
                "registers": regs,
                "spill_bytes": spill,
                "tile": f"{BM}x{BN}",
                "warps": launch["num_warps"],
                "loop_instructions": loops,  # per warp, outermost loop (one tile) first, then the bucket loops
                "warp_instructions_per_pair": per_pair,  # the tile loop's body x warps / pairs of a tile
            }
        result["kernels"][config] = row
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
