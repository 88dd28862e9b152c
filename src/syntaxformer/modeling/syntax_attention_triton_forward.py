"""The forward Triton kernels of the ``"triton"`` Syntax-BERT attention
(:mod:`syntaxformer.modeling.syntax_attention_triton` launches them and says what each computes): the statistics
sweep, the biased flash-attention forward, the table algebra's per-group log-sum-exp and per-bucket bias, and the
tile loads, score tiles and per-bucket reductions the backward kernels share. Defined only where triton is
importable (the module imports without it, as every copied module of an exported model folder must).
"""

from __future__ import annotations

try:  # triton is optional (the ``dev`` extra installs it; CUDA builds of torch ship it)
    import triton
    import triton.language as tl
except ImportError:  # pragma: no cover - exercised where triton is absent
    triton = None
    tl = None

# ---------------------------------------------------------------------------------------------------------------
# Kernels. Index conventions: q / k / v / dO ``[B, H, L, d]`` with any strides; the joint index ``[B, L, L]``
# (contiguous); per-bucket tables ``[B, H, L, J]`` and per-row vectors ``[B, H, L]`` contiguous fp32. One program
# per (block of rows or keys, batch * head). ``BD`` is the head size rounded up to a power of two >= 16 (tl.dot).
# ---------------------------------------------------------------------------------------------------------------

if triton is not None:

    @triton.jit
    def load_tile(base, idx, ok, s_l, s_d, D: tl.constexpr, BD: tl.constexpr, TRANS: tl.constexpr):
        """The vectors ``idx`` (``ok``: inside the sequence) of a ``[L, D]`` matrix at ``base`` with strides
        ``(s_l, s_d)``: a ``[n, BD]`` tile (``TRANS``: ``[BD, n]``), zero outside the sequence and beyond ``D``."""
        dcols = tl.arange(0, BD)
        if TRANS:
            x = tl.load(
                base + idx[None, :] * s_l + dcols[:, None] * s_d, mask=ok[None, :] & (dcols[:, None] < D), other=0.0
            )
        else:
            x = tl.load(
                base + idx[:, None] * s_l + dcols[None, :] * s_d, mask=ok[:, None] & (dcols[None, :] < D), other=0.0
            )
        return x

    @triton.jit
    def store_tile(base, idx, ok, x, BD: tl.constexpr):
        """Store ``x`` ``[n, BD]`` as the vectors ``idx`` (``ok``: inside the sequence) of a contiguous ``[L, BD]``
        output at ``base``."""
        dcols = tl.arange(0, BD)
        tl.store(base + idx[:, None] * BD + dcols[None, :], x, mask=ok[:, None])

    @triton.jit
    def tile_descriptor(DESC, b, i, j, L, BM: tl.constexpr, BN: tl.constexpr):
        """``(computed, uniform)`` of the tile (block ``i`` of ``BM`` rows, block ``j`` of ``BN`` keys) of example
        ``b`` from its descriptor (:func:`tile_descriptors`): computed unless ``SKIP`` (no related pair, nothing the
        layer reads); ``UNIFORM``: one joint bucket per row."""
        desc = tl.load(DESC + (b * tl.cdiv(L, BM) + i) * tl.cdiv(L, BN) + j)
        return (desc & 1) == 0, (desc & 2) != 0

    @triton.jit
    def tile_buckets(idx_base, rows, keys, row_ok, key_ok, L, uniform, TRANS: tl.constexpr):
        """The joint bucket of every pair of a tile, -1 outside the sequence: ``[BM, BN]`` (``TRANS``: ``[BN, BM]``,
        the keys along the first axis). A ``uniform`` tile (one bucket per row, :func:`tile_descriptors`) reads one
        id per row, from its first key."""
        if TRANS:
            ok = row_ok[None, :] & key_ok[:, None]
            if uniform:
                first = tl.load(idx_base + rows * L + tl.min(keys, 0), mask=row_ok, other=-1).to(tl.int32)
                jj = tl.where(ok, first[None, :], -1)
            else:
                jj = tl.load(idx_base + rows[None, :] * L + keys[:, None], mask=ok, other=-1).to(tl.int32)
        else:
            ok = row_ok[:, None] & key_ok[None, :]
            if uniform:
                first = tl.load(idx_base + rows * L + tl.min(keys, 0), mask=row_ok, other=-1).to(tl.int32)
                jj = tl.where(ok, first[:, None], -1)
            else:
                jj = tl.load(idx_base + rows[:, None] * L + keys[None, :], mask=ok, other=-1).to(tl.int32)
        return jj

    @triton.jit
    def score_tile(
        x, base, s_l, s_d, scale, idx_base, fixed, fixed_ok, start, L, uniform, D: tl.constexpr, BD: tl.constexpr,
        N: tl.constexpr, PREC: tl.constexpr, TRANS: tl.constexpr,
    ):  # fmt: skip
        """``(scores, joint buckets, other, other_ok)`` of a tile (:func:`tile_buckets`): ``x`` ``[BM, BD]`` the
        block's queries ``fixed`` (``fixed_ok``: inside the sequence), ``base`` (strides ``s_l``, ``s_d``) the keys,
        ``other`` the ``N`` keys from ``start``, ``[BM, N]`` tiles; ``TRANS``: ``x`` the block's keys, ``base`` the
        queries, ``other`` the ``N`` rows from ``start``, ``[BN, N]`` tiles."""
        other = start + tl.arange(0, N)
        other_ok = other < L
        s = tl.dot(x, load_tile(base, other, other_ok, s_l, s_d, D, BD, True), input_precision=PREC) * scale
        if TRANS:
            jj = tile_buckets(idx_base, other, fixed, other_ok, fixed_ok, L, uniform, True)
        else:
            jj = tile_buckets(idx_base, fixed, other, fixed_ok, other_ok, L, uniform, False)
        return s, jj, other, other_ok

    # The bucket reductions: a ``uniform`` tile (one bucket per row, :func:`tile_descriptors`) takes one reduction
    # per row; any other tile either one ``[BM, BN, JP]`` one-hot comparison (``ONE_HOT``, the interpreter: one numpy
    # op) or a loop over the buckets up to the largest id in the tile (the GPU: two ``[BM, BN]`` / ``[BM, JP]``
    # passes per bucket, no ``[BM, BN, JP]`` registers).

    @triton.jit
    def bucket_sums(x, jj, J, uniform, BM: tl.constexpr, JP: tl.constexpr, ONE_HOT: tl.constexpr):
        """``[BM, JP]`` per row the sum of ``x`` ``[BM, BN]`` over the entries of each bucket (``jj``, -1 = none)."""
        jcols = tl.arange(0, JP)
        if uniform:
            here = jcols[None, :] == tl.max(jj, 1)[:, None]
            out = tl.where(here, tl.sum(tl.where(jj >= 0, x, 0.0), 1)[:, None], 0.0)
        else:
            if ONE_HOT:
                out = tl.sum(tl.where(jj[:, :, None] == jcols[None, None, :], x[:, :, None], 0.0), 1)
            else:
                out = tl.zeros([BM, JP], tl.float32)
                top = tl.minimum(tl.max(tl.max(jj, 1), 0) + 1, J)  # buckets above the tile's largest id: empty
                for j in range(top):
                    out = tl.where(jcols[None, :] == j, tl.sum(tl.where(jj == j, x, 0.0), 1)[:, None], out)
        return out

    @triton.jit
    def _bucket_sums2(x, y, jj, J, BM: tl.constexpr, JP: tl.constexpr, ONE_HOT: tl.constexpr):
        """:func:`bucket_sums` of two tiles at once (one bucket comparison for both), without the per-row path for
        uniform tiles: in the statistics sweep that branch doubled the compiled bucket loop (218 -> 511 sm_90
        instructions per bucket, ``experiments/triton_compile_report.py``), and on real trees no tile that is
        computed is uniform."""
        jcols = tl.arange(0, JP)
        if ONE_HOT:
            hit = jj[:, :, None] == jcols[None, None, :]
            out_x = tl.sum(tl.where(hit, x[:, :, None], 0.0), 1)
            out_y = tl.sum(tl.where(hit, y[:, :, None], 0.0), 1)
        else:
            out_x = tl.zeros([BM, JP], tl.float32)
            out_y = tl.zeros([BM, JP], tl.float32)
            top = tl.minimum(tl.max(tl.max(jj, 1), 0) + 1, J)  # buckets above the tile's largest id: empty
            for j in range(top):
                sel = jj == j
                here = jcols[None, :] == j
                out_x = tl.where(here, tl.sum(tl.where(sel, x, 0.0), 1)[:, None], out_x)
                out_y = tl.where(here, tl.sum(tl.where(sel, y, 0.0), 1)[:, None], out_y)
        return out_x, out_y

    @triton.jit
    def _bucket_max_update(x, jj, mx, J, uniform, BM: tl.constexpr, JP: tl.constexpr, ONE_HOT: tl.constexpr):
        """The running per-bucket maximum ``mx`` ``[BM, JP]`` raised by a tile ``x`` ``[BM, BN]`` (buckets ``jj``,
        -1 = none), and per pair its bucket's new maximum ``[BM, BN]`` (0 for none), in one pass over the tile's
        buckets."""
        jcols = tl.arange(0, JP)
        if uniform:
            here = jcols[None, :] == tl.max(jj, 1)[:, None]
            tile = tl.max(tl.where(jj >= 0, x, float("-inf")), 1)  # (BM,)
            new = tl.where(here, tl.maximum(mx, tile[:, None]), mx)
            row = tl.max(tl.where(here, new, float("-inf")), 1)
            top = tl.zeros_like(x) + tl.where(row == float("-inf"), 0.0, row)[:, None]
        else:
            if ONE_HOT:
                hit = jj[:, :, None] == jcols[None, None, :]
                new = tl.maximum(mx, tl.max(tl.where(hit, x[:, :, None], float("-inf")), 1))
                top = tl.sum(tl.where(hit, tl.where(new == float("-inf"), 0.0, new)[:, None, :], 0.0), 2)
            else:
                new = mx
                top = tl.zeros_like(x)
                last = tl.minimum(tl.max(tl.max(jj, 1), 0) + 1, J)  # buckets above the tile's largest id: empty
                for j in range(last):
                    sel = jj == j
                    here = jcols[None, :] == j
                    col = tl.maximum(
                        tl.max(tl.where(here, new, float("-inf")), 1), tl.max(tl.where(sel, x, float("-inf")), 1)
                    )  # (BM,) bucket j's new maximum
                    new = tl.where(here, col[:, None], new)
                    top = tl.where(sel, col[:, None], top)
        return new, top

    # Addresses are computed from the block's start in every iteration (integer multiply-adds), never carried
    # through the loops as [BM, BN] pointer tensors: 64-bit pointers per element would hold most registers.

    @triton.jit
    def prepass_sum_kernel(
        DESC,
        Q,
        K,
        W,
        IDX,
        LZ,
        Y,
        SHIFT,
        sqb,
        sqh,
        sql,
        sqd,
        skb,
        skh,
        skl,
        skd,
        H,
        L,
        J,
        D: tl.constexpr,
        scale,
        HAS_W: tl.constexpr,
        BM: tl.constexpr,
        BN: tl.constexpr,
        BD: tl.constexpr,
        JP: tl.constexpr,
        PREC: tl.constexpr,
        ONE_HOT: tl.constexpr,
    ):
        """``LZ = log Σ_{k in j} exp(S_ik) - c_i`` and ``Y = Σ_{k in j} π_ik w_k`` per (row, joint bucket), each
        bucket's sums kept relative to its own running maximum (rescaled when a tile raises it, as flash attention's
        online softmax, per bucket); ``SHIFT`` ``c_i`` = the row's largest score. One sweep over the keys."""
        pid, bh = tl.program_id(0), tl.program_id(1)
        b, h = bh // H, bh % H
        rows = pid * BM + tl.arange(0, BM)
        jcols = tl.arange(0, JP)
        row_ok = rows < L
        q = load_tile(Q + b * sqb + h * sqh, rows, row_ok, sql, sqd, D, BD, False)
        k_base = K + b * skb + h * skh
        idx_base = IDX + b * L * L
        row_tab = (bh * L + rows[:, None]) * J  # (BM, 1)
        mx = tl.full([BM, JP], float("-inf"), tl.float32)
        z = tl.zeros([BM, JP], tl.float32)
        y = tl.zeros([BM, JP], tl.float32)
        for start in range(0, L, BN):
            computed, uniform = tile_descriptor(DESC, b, pid, start // BN, L, BM, BN)
            if computed:
                s, jj, keys, key_ok = score_tile(
                    q, k_base, skl, skd, scale, idx_base, rows, row_ok, start, L, uniform, D, BD, BN, PREC, False
                )
                ok = jj >= 0
                new, top = _bucket_max_update(s, jj, mx, J, uniform, BM, JP, ONE_HOT)  # top: the pair's bucket's
                rescale = tl.exp(mx - tl.where(new == float("-inf"), 0.0, new))  # (BM, JP); 0 for new buckets
                z *= rescale
                y *= rescale
                mx = new
                e = tl.where(ok, tl.exp(s - top), 0.0)
                if HAS_W:
                    w = tl.load(W + bh * L + keys, mask=key_ok, other=0.0)
                    z_tile, y_tile = _bucket_sums2(e, e * w[None, :], jj, J, BM, JP, ONE_HOT)
                    z += z_tile
                    y += y_tile
                else:
                    z += bucket_sums(e, jj, J, uniform, BM, JP, ONE_HOT)
        tab_ok = row_ok[:, None] & (jcols[None, :] < J)
        top = tl.max(mx, 1)
        shift = tl.where(top == float("-inf"), 0.0, top)  # (BM,)
        tl.store(SHIFT + bh * L + rows, shift, mask=row_ok)
        live = z > 0
        z_safe = tl.where(live, z, 1.0)
        lz = tl.where(live, tl.log(z_safe) + (mx - shift[:, None]), float("-inf"))
        tl.store(LZ + row_tab + jcols[None, :], lz, mask=tab_ok)
        if HAS_W:
            tl.store(Y + row_tab + jcols[None, :], y / z_safe, mask=tab_ok)

    @triton.jit
    def attn_fwd_kernel(
        DESC,
        Q,
        K,
        V,
        IDX,
        BIAS,
        SHIFT,
        O,  # noqa: E741  (the output tile, named as in the kernel literature)
        LSE,
        W,
        CTX,
        sqb,
        sqh,
        sql,
        sqd,
        skb,
        skh,
        skl,
        skd,
        svb,
        svh,
        svl,
        svd,
        H,
        L,
        J,
        D: tl.constexpr,
        scale,
        BM: tl.constexpr,
        BN: tl.constexpr,
        BD: tl.constexpr,
        PREC: tl.constexpr,
    ):
        """``O = softmax(S - c + b[joint]) V`` (online softmax over key blocks), its ``lse`` per row (+inf for a row
        of weight 0) and the context ``CTX = W O`` (``W`` ``[B, H, L]`` the row weight; ``O`` is kept for the
        backward)."""
        pid, bh = tl.program_id(0), tl.program_id(1)
        b, h = bh // H, bh % H
        rows = pid * BM + tl.arange(0, BM)
        row_ok = rows < L
        q = load_tile(Q + b * sqb + h * sqh, rows, row_ok, sql, sqd, D, BD, False)
        k_base = K + b * skb + h * skh
        v_base = V + b * svb + h * svh
        idx_base = IDX + b * L * L
        row_tab = (bh * L + rows[:, None]) * J
        shift = tl.load(SHIFT + bh * L + rows, mask=row_ok, other=0.0)
        acc = tl.zeros([BM, BD], tl.float32)
        m = tl.full([BM], float("-inf"), tl.float32)
        total = tl.zeros([BM], tl.float32)
        for start in range(0, L, BN):
            computed, uniform = tile_descriptor(DESC, b, pid, start // BN, L, BM, BN)
            if computed:
                s, jj, keys, key_ok = score_tile(
                    q, k_base, skl, skd, scale, idx_base, rows, row_ok, start, L, uniform, D, BD, BN, PREC, False
                )
                ok = jj >= 0
                t = tl.where(ok, (s - shift[:, None]) + tl.load(BIAS + row_tab + jj, mask=ok, other=0.0), float("-inf"))
                m_new = tl.maximum(m, tl.max(t, 1))
                m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
                p = tl.exp(t - m_safe[:, None])
                rescale = tl.exp(m - m_safe)
                total = total * rescale + tl.sum(p, 1)
                v = load_tile(v_base, keys, key_ok, svl, svd, D, BD, False)  # (BN, BD)
                acc = acc * rescale[:, None] + tl.dot(p.to(v.dtype), v, input_precision=PREC)
                m = m_new
        live = total > 0
        total_safe = tl.where(live, total, 1.0)
        o = acc / total_safe[:, None]
        store_tile(O + bh * L * BD, rows, row_ok, o, BD)
        store_tile(CTX + bh * L * BD, rows, row_ok, o * tl.load(W + bh * L + rows, mask=row_ok, other=0.0)[:, None], BD)
        lse = tl.where(live, tl.where(m == float("-inf"), 0.0, m) + tl.log(total_safe), float("inf"))
        tl.store(LSE + bh * L + rows, lse, mask=row_ok)

    # The table algebra's per-group log-sum-exp (between the statistics and the attention sweeps): one program per
    # (batch * head * row), on the [B, H, L, J] tables, nothing of the L x L pairs.

    @triton.jit
    def table_row(X, OK, r, H, L, J, HAS_OK: tl.constexpr, JP: tl.constexpr):
        """Row ``r`` of a per-joint-bucket table ``X`` ``[B * H * L, J]`` (-inf: none): ``(pair_row, jcols, j_ok, x,
        live)``, ``pair_row`` its row ``b * L + i`` of the ``[B, L, ·]`` index tables, ``live`` the buckets above
        -inf (and allowed: ``OK`` ``[B, L, J]``)."""
        pair_row = (r // (H * L)) * L + r % L
        jcols = tl.arange(0, JP)
        j_ok = jcols < J
        x = tl.load(X + r * J + jcols, mask=j_ok, other=float("-inf"))
        live = x > float("-inf")
        if HAS_OK:
            live = live & (tl.load(OK + pair_row * J + jcols, mask=j_ok, other=0) != 0)
        return pair_row, jcols, j_ok, x, live

    @triton.jit
    def group_lse_kernel(
        X,
        Y,
        GIDX,
        OK,
        LZ,
        MEAN,
        H,
        L,
        J,
        NG,
        HAS_Y: tl.constexpr,
        HAS_OK: tl.constexpr,
        COPIES: tl.constexpr,
        JP: tl.constexpr,
        GP: tl.constexpr,
    ):
        """Per row ``r`` of ``X`` ``[B * H * L, J]`` (log-sums per joint bucket, -inf for empty ones) and each of
        the ``COPIES`` group ids of every joint bucket (``GIDX`` ``[B, L, COPIES * J]``, below ``NG``; ``OK``
        ``[B, L, J]``: allowed buckets), the log-sum-exp per group ``LZ`` ``[B * H * L, NG]`` (-inf for an empty
        group), each group with its own maximum, and the ``exp(X)``-weighted mean of ``Y`` per group ``MEAN``."""
        r = tl.program_id(0)
        pair_row, jcols, j_ok, x, live = table_row(X, OK, r, H, L, J, HAS_OK, JP)
        gcols = tl.arange(0, GP)
        g_base = GIDX + pair_row * (COPIES * J)
        m = tl.full([GP], float("-inf"), tl.float32)
        for c in tl.static_range(COPIES):
            g = tl.load(g_base + c * J + jcols, mask=j_ok, other=-1)
            hit = (g[None, :] == gcols[:, None]) & live[None, :]  # (GP, JP)
            m = tl.maximum(m, tl.max(tl.where(hit, x[None, :], float("-inf")), 1))
        z = tl.zeros([GP], tl.float32)
        s = tl.zeros([GP], tl.float32)
        if HAS_Y:
            y = tl.load(Y + r * J + jcols, mask=j_ok, other=0.0)
        for c in tl.static_range(COPIES):
            g = tl.load(g_base + c * J + jcols, mask=j_ok, other=-1)
            hit = (g[None, :] == gcols[:, None]) & live[None, :]
            top = tl.sum(tl.where(hit, m[:, None], 0.0), 0)  # (JP,) each live bucket's group maximum
            e = tl.where(live, tl.exp(x - top), 0.0)
            z += tl.sum(tl.where(hit, e[None, :], 0.0), 1)
            if HAS_Y:
                s += tl.sum(tl.where(hit, (e * y)[None, :], 0.0), 1)
        empty = z == 0
        z_safe = tl.where(empty, 1.0, z)
        g_ok = gcols < NG
        tl.store(LZ + r * NG + gcols, tl.where(empty, float("-inf"), tl.log(z_safe) + m), mask=g_ok)
        if HAS_Y:
            tl.store(MEAN + r * NG + gcols, s / z_safe, mask=g_ok)

    @triton.jit
    def group_term(LA, LZ, PHI, LIVE, r, g, ok, H, L, NG):
        """The term ``log(α_g / Z_g)`` of row ``r`` (of ``[B * H * L, ·]``) for the group ids ``g`` (``ok``: to
        read): ``LA`` ``[B, L, NG - 1]`` the partitions' groups' ``log α`` (-inf: not a candidate), valid on a head
        with ``LIVE`` ``[H]`` set; the full row (``g = NG - 1``) ``log φ`` of ``PHI`` ``[B * H * L]`` (-inf where
        ``φ <= 0``); ``log Z`` from ``LZ`` ``[B * H * L, NG]``; -inf where the weight is none."""
        pair_row = (r // (H * L)) * L + r % L
        live = tl.load(LIVE + (r // L) % H) != 0
        full = g == NG - 1
        la = tl.load(LA + pair_row * (NG - 1) + g, mask=ok & (g < NG - 1), other=float("-inf"))
        phi = tl.load(PHI + r)
        log_phi = tl.where(phi > 0, tl.log(tl.where(phi > 0, phi, 1.0)), float("-inf"))
        lw = tl.where(full, log_phi, tl.where(live, la, float("-inf")))
        lz = tl.load(LZ + r * NG + g, mask=ok & (lw > float("-inf")), other=0.0)
        return tl.where(lw > float("-inf"), lw - lz, float("-inf"))

    @triton.jit
    def group_bias_kernel(
        LA, LZ, PHI, LIVE, GIDX, OK, BIAS, W, H, L, J, NG, HAS_OK: tl.constexpr, COPIES: tl.constexpr,
        JP: tl.constexpr, GP: tl.constexpr,
    ):  # fmt: skip
        """Per row ``r`` the bias of every joint bucket ``BIAS`` ``[B * H * L, J]``: the log-sum-exp over the
        ``COPIES`` groups of the bucket (``GIDX`` ``[B, L, COPIES * J]``) of their terms ``log(α / Z)``
        (:func:`group_term`; -inf: none); -inf where no term is finite, 0 in a row where none is (a row of weight 0),
        the fp32 minimum for a disallowed bucket (``OK`` ``[B, L, J]`` 0); and the row's weight ``W`` ``[B * H * L]``
        ``= Σ_g α_g (on a live head) + φ``."""
        r = tl.program_id(0)
        pair_row = (r // (H * L)) * L + r % L
        jcols = tl.arange(0, JP)
        j_ok = jcols < J
        g_base = GIDX + pair_row * (COPIES * J)
        top = tl.full([JP], float("-inf"), tl.float32)
        for c in tl.static_range(COPIES):
            g = tl.load(g_base + c * J + jcols, mask=j_ok, other=0)
            top = tl.maximum(top, group_term(LA, LZ, PHI, LIVE, r, g, j_ok, H, L, NG))
        some = top > float("-inf")
        shift = tl.where(some & (top < float("inf")), top, 0.0)  # (+inf terms give +inf, as torch.logsumexp)
        total = tl.zeros([JP], tl.float32)
        for c in tl.static_range(COPIES):
            g = tl.load(g_base + c * J + jcols, mask=j_ok, other=0)
            total += tl.exp(group_term(LA, LZ, PHI, LIVE, r, g, j_ok, H, L, NG) - shift)
        bias = tl.where(some, shift + tl.log(tl.where(some, total, 1.0)), float("-inf"))
        bias = tl.where(tl.max(some.to(tl.int32), 0) > 0, bias, 0.0)
        if HAS_OK:
            allowed = tl.load(OK + pair_row * J + jcols, mask=j_ok, other=1) != 0
            bias = tl.where(allowed, bias, -3.4028234663852886e38)
        tl.store(BIAS + r * J + jcols, bias, mask=j_ok)
        gcols = tl.arange(0, GP)
        la = tl.load(LA + pair_row * (NG - 1) + gcols, mask=gcols < NG - 1, other=float("-inf"))
        live = tl.load(LIVE + (r // L) % H) != 0
        tl.store(W + r, tl.where(live, tl.sum(tl.exp(la), 0), 0.0) + tl.load(PHI + r))
