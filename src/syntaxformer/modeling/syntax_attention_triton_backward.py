"""The backward Triton kernels of the ``"triton"`` Syntax-BERT attention
(:mod:`syntaxformer.modeling.syntax_attention_triton` launches them): a row sweep for the attention's ``dQ`` and the
bias gradient, a column sweep for ``dK``, ``dV``, ``dw`` and the statistics' ``dQ``, and the table algebra's
backward kernels. The shared tile helpers are in :mod:`syntaxformer.modeling.syntax_attention_triton_forward`.
"""

from __future__ import annotations

# triton is optional: the kernels are defined only where it imports (index conventions: the forward module)
from syntaxformer.modeling.syntax_attention_triton_forward import triton

if triton is not None:
    from syntaxformer.modeling.syntax_attention_triton_forward import (
        bucket_sums,
        group_term,
        load_tile,
        score_tile,
        store_tile,
        table_row,
        tile_descriptor,
        tl,
    )

    @triton.jit
    def attn_bwd_rows_kernel(
        DESC,
        Q,
        K,
        V,
        IDX,
        BIAS,
        SHIFT,
        LSE,
        DCTX,
        OUT,
        W,
        DO,
        DELTA,
        DW,
        DQ,
        DB,
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
        sgb,
        sgh,
        sgl,
        sgd,
        H,
        L,
        J,
        D: tl.constexpr,
        scale,
        BM: tl.constexpr,
        BN: tl.constexpr,
        BD: tl.constexpr,
        JP: tl.constexpr,
        PREC: tl.constexpr,
        ONE_HOT: tl.constexpr,
    ):
        """``dQ`` and the bias gradient ``db_ij = Σ_{k in j} P_ik (dO_i · V_k - D_i)`` per block of rows; first, from
        the gradient of the weighted context ``DCTX`` ``[B, H, L, D]`` (strides ``sg*``), the unweighted output
        ``OUT`` ``[B, H, L, BD]`` and the row weight ``W`` ``[B, H, L]``: the attention's ``dO = DCTX W``, the
        per-row ``D_i = dO_i · O_i`` and the weight's gradient ``dW_i = DCTX_i · O_i``, stored for the column sweep
        (``DO``, ``DELTA``) and the table algebra (``DW``)."""
        pid, bh = tl.program_id(0), tl.program_id(1)
        b, h = bh // H, bh % H
        rows = pid * BM + tl.arange(0, BM)
        jcols = tl.arange(0, JP)
        row_ok = rows < L
        q = load_tile(Q + b * sqb + h * sqh, rows, row_ok, sql, sqd, D, BD, False)
        d_ctx = load_tile(DCTX + b * sgb + h * sgh, rows, row_ok, sgl, sgd, D, BD, False).to(tl.float32)
        o = load_tile(OUT + bh * L * BD, rows, row_ok, BD, 1, BD, BD, False).to(tl.float32)
        do = d_ctx * tl.load(W + bh * L + rows, mask=row_ok, other=0.0)[:, None]
        delta = tl.sum(do * o, 1)  # (BM,)
        store_tile(DO + bh * L * BD, rows, row_ok, do, BD)
        tl.store(DELTA + bh * L + rows, delta, mask=row_ok)
        tl.store(DW + bh * L + rows, tl.sum(d_ctx * o, 1), mask=row_ok)
        do = do.to(q.dtype)
        lse = tl.load(LSE + bh * L + rows, mask=row_ok, other=float("inf"))
        shift = tl.load(SHIFT + bh * L + rows, mask=row_ok, other=0.0)
        k_base = K + b * skb + h * skh
        v_base = V + b * svb + h * svh
        idx_base = IDX + b * L * L
        row_tab = (bh * L + rows[:, None]) * J
        dq = tl.zeros([BM, BD], tl.float32)
        db = tl.zeros([BM, JP], tl.float32)
        for start in range(0, L, BN):
            computed, uniform = tile_descriptor(DESC, b, pid, start // BN, L, BM, BN)
            if computed:
                s, jj, keys, key_ok = score_tile(
                    q, k_base, skl, skd, scale, idx_base, rows, row_ok, start, L, uniform, D, BD, BN, PREC, False
                )
                ok = jj >= 0
                t = (s - shift[:, None]) + tl.load(BIAS + row_tab + jj, mask=ok, other=0.0)
                p = tl.where(ok, tl.exp(t - lse[:, None]), 0.0)
                vt = load_tile(v_base, keys, key_ok, svl, svd, D, BD, True)  # (BD, BN)
                ds = p * (tl.dot(do, vt.to(q.dtype), input_precision=PREC) - delta[:, None])  # (BM, BN)
                k = load_tile(k_base, keys, key_ok, skl, skd, D, BD, False)  # (BN, BD)
                dq += tl.dot(ds.to(k.dtype), k, input_precision=PREC)
                db += bucket_sums(ds, jj, J, uniform, BM, JP, ONE_HOT)
        store_tile(DQ + bh * L * BD, rows, row_ok, dq * scale, BD)
        tl.store(DB + row_tab + jcols[None, :], db, mask=row_ok[:, None] & (jcols[None, :] < J))

    @triton.jit
    def bwd_cols_kernel(
        DESC,
        Q,
        K,
        V,
        W,
        IDX,
        BIAS,
        LZ,
        SHIFT,
        LSE,
        DO,
        DELTA,
        A,
        DY,
        DQ,
        DK,
        DV,
        DW,
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
        HAS_W: tl.constexpr,
        BM: tl.constexpr,
        BN: tl.constexpr,
        BD: tl.constexpr,
        PREC: tl.constexpr,
    ):
        """Per block of keys (tiles transposed: ``[BN, BM]``) the rest of the backward in one sweep: ``dV``,
        ``dK = (dS_att + dS_stat)ᵀ Q`` with the attention's ``dS_att = P (dO · V - D)`` and the statistics'
        ``dS_stat = π (a_j + dY_j w_k)``, ``dw``, and the statistics' ``dQ = dS_stat K`` added atomically to ``DQ``
        (which holds the attention's ``dQ`` from :func:`attn_bwd_rows_kernel`): ``a`` and ``dY`` depend on the
        bias gradient of whole rows, so the statistics' ``dQ`` cannot be summed in the row sweep."""
        pid, bh = tl.program_id(0), tl.program_id(1)
        b, h = bh // H, bh % H
        keys = pid * BN + tl.arange(0, BN)
        dcols = tl.arange(0, BD)
        key_ok = keys < L
        k = load_tile(K + b * skb + h * skh, keys, key_ok, skl, skd, D, BD, False)  # (BN, BD)
        v = load_tile(V + b * svb + h * svh, keys, key_ok, svl, svd, D, BD, False)  # (BN, BD)
        v = v.to(k.dtype)
        if HAS_W:
            w = tl.load(W + bh * L + keys, mask=key_ok, other=0.0)
        q_base = Q + b * sqb + h * sqh
        idx_base = IDX + b * L * L
        do_base = DO + bh * L * BD
        dk = tl.zeros([BN, BD], tl.float32)
        dv = tl.zeros([BN, BD], tl.float32)
        dw = tl.zeros([BN], tl.float32)
        for start in range(0, L, BM):
            computed, uniform = tile_descriptor(DESC, b, start // BM, pid, L, BM, BN)
            if computed:
                st, jj, rows, row_ok = score_tile(
                    k, q_base, sql, sqd, scale, idx_base, keys, key_ok, start, L, uniform, D, BD, BM, PREC, True
                )
                ok = jj >= 0
                tab = (bh * L + rows[None, :]) * J + jj  # (BN, BM) the pair's table entry
                lse = tl.load(LSE + bh * L + rows, mask=row_ok, other=float("inf"))
                shift = tl.load(SHIFT + bh * L + rows, mask=row_ok, other=0.0)
                centred = st - shift[None, :]
                # the attention: P and dS_att, dV
                pt = tl.where(ok, tl.exp(centred + tl.load(BIAS + tab, mask=ok, other=0.0) - lse[None, :]), 0.0)
                do = load_tile(do_base, rows, row_ok, BD, 1, BD, BD, False)
                do = do.to(k.dtype)  # (BM, BD)
                dv += tl.dot(pt.to(k.dtype), do, input_precision=PREC)
                dot = load_tile(do_base, rows, row_ok, BD, 1, BD, BD, True)
                dpt = tl.dot(v, dot.to(k.dtype), input_precision=PREC)  # (BN, BM) dO · V, transposed
                delta = tl.load(DELTA + bh * L + rows, mask=row_ok, other=0.0)
                # the statistics: π and dS_stat, dw
                pi = tl.where(ok, tl.exp(centred - tl.load(LZ + tab, mask=ok, other=0.0)), 0.0)
                dstat = pi * tl.load(A + tab, mask=ok, other=0.0)
                if HAS_W:
                    pdy = pi * tl.load(DY + tab, mask=ok, other=0.0)
                    dw += tl.sum(pdy, 1)
                    dstat += pdy * w[:, None]
                q = load_tile(q_base, rows, row_ok, sql, sqd, D, BD, False)  # (BM, BD)
                dk += tl.dot((pt * (dpt - delta[None, :]) + dstat).to(q.dtype), q, input_precision=PREC)
                dq = tl.dot(tl.trans(dstat).to(k.dtype), k, input_precision=PREC) * scale  # (BM, BD)
                tl.atomic_add(DQ + (bh * L + rows[:, None]) * BD + dcols[None, :], dq, mask=row_ok[:, None])
        store_tile(DK + bh * L * BD, keys, key_ok, dk * scale, BD)
        store_tile(DV + bh * L * BD, keys, key_ok, dv, BD)
        if HAS_W:
            tl.store(DW + bh * L + keys, dw, mask=key_ok)

    @triton.jit
    def group_lse_bwd_kernel(
        X,
        Y,
        GIDX,
        OK,
        LZ,
        MEAN,
        DLZ,
        DMEAN,
        DX,
        DY,
        H,
        L,
        J,
        NG,
        HAS_Y: tl.constexpr,
        HAS_OK: tl.constexpr,
        COPIES: tl.constexpr,
        JP: tl.constexpr,
    ):
        """The gradients of :func:`group_lse_kernel`'s inputs: per joint bucket ``k`` and copy, with
        ``p_k = exp(x_k - LZ_g)`` its share of its group ``g``, ``dX_k = Σ p_k (dLZ_g + dMEAN_g (y_k - MEAN_g))``
        and ``dY_k = Σ p_k dMEAN_g`` (gathers only)."""
        r = tl.program_id(0)
        pair_row, jcols, j_ok, x, live = table_row(X, OK, r, H, L, J, HAS_OK, JP)
        if HAS_Y:
            y = tl.load(Y + r * J + jcols, mask=j_ok, other=0.0)
        dx = tl.zeros([JP], tl.float32)
        dy = tl.zeros([JP], tl.float32)
        for c in tl.static_range(COPIES):
            g = tl.load(GIDX + pair_row * (COPIES * J) + c * J + jcols, mask=j_ok, other=0)
            at = r * NG + g
            p = tl.where(live, tl.exp(x - tl.load(LZ + at, mask=live, other=0.0)), 0.0)
            coef = tl.load(DLZ + at, mask=live, other=0.0)
            if HAS_Y:
                d_mean = tl.load(DMEAN + at, mask=live, other=0.0)
                coef += d_mean * (y - tl.load(MEAN + at, mask=live, other=0.0))
                dy += p * d_mean
            dx += p * coef
        tl.store(DX + r * J + jcols, dx, mask=j_ok)
        if HAS_Y:
            tl.store(DY + r * J + jcols, dy, mask=j_ok)

    @triton.jit
    def group_bias_bwd_kernel(
        LA, LZ, PHI, LIVE, GIDX, OK, BIAS, DBIAS, DW, DLA, DLZ, DPHI, H, L, J, NG, HAS_OK: tl.constexpr,
        COPIES: tl.constexpr, JP: tl.constexpr, GP: tl.constexpr,
    ):  # fmt: skip
        """The gradients of :func:`group_bias_kernel`'s inputs. Per group its term's ``dT_g = Σ_{(bucket, copy) in g}
        exp(T_g - bias) dBIAS`` over the buckets with a finite bias (none in a row of weight 0 or a disallowed
        bucket); then ``dLZ_g = -dT_g``, ``dLA_g = dT_g + dW α_g`` (on a live head; added over the heads,
        atomically: ``DLA`` starts at zero) and ``dPHI = dT_full / φ + dW``."""
        r = tl.program_id(0)
        pair_row, jcols, j_ok, bias, live = table_row(BIAS, OK, r, H, L, J, HAS_OK, JP)
        # finite biases only (a row of weight 0 has bias 0 but no finite term: its shares are 0; an infinite term,
        # as in a row whose tiles were all skipped, gives no gradient)
        live = live & (bias < float("inf"))
        gcols = tl.arange(0, GP)
        d_bias = tl.where(live, tl.load(DBIAS + r * J + jcols, mask=j_ok, other=0.0), 0.0)
        d_t = tl.zeros([GP], tl.float32)
        for c in tl.static_range(COPIES):
            g = tl.load(GIDX + pair_row * (COPIES * J) + c * J + jcols, mask=j_ok, other=-1)
            t = group_term(LA, LZ, PHI, LIVE, r, g, live, H, L, NG)
            share = tl.where(live, tl.exp(t - tl.where(live, bias, 0.0)), 0.0) * d_bias  # (JP,)
            hit = g[None, :] == gcols[:, None]  # (GP, JP)
            d_t += tl.sum(tl.where(hit, share[None, :], 0.0), 1)
        g_ok = gcols < NG
        tl.store(DLZ + r * NG + gcols, -d_t, mask=g_ok)
        d_w = tl.load(DW + r)
        head_live = tl.load(LIVE + (r // L) % H) != 0
        parts = gcols < NG - 1
        la = tl.load(LA + pair_row * (NG - 1) + gcols, mask=parts, other=float("-inf"))
        d_la = tl.where(head_live & (la > float("-inf")), d_t + d_w * tl.exp(la), 0.0)
        tl.atomic_add(DLA + pair_row * (NG - 1) + gcols, d_la, mask=parts)
        phi = tl.load(PHI + r)
        d_full = tl.sum(tl.where(gcols == NG - 1, d_t, 0.0), 0)
        tl.store(DPHI + r, tl.where(phi > 0, d_full / tl.where(phi > 0, phi, 1.0), 0.0) + d_w)
