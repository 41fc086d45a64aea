"""FLOPs per op from recorded shapes, joined to the kernels they launched; achieved TFLOP/s; MFU.

**Which ops count** (:data:`FLOP_OPS`). The ops that dominate training, with the formulas of
PyTorch's ``torch.utils.flop_counter`` (only multiply-adds, 2 FLOPs each; bias adds and softmax
are not counted), from ``Input Dims`` (and, for convolutions, ``Concrete Inputs``), which the
profiler writes with ``record_shapes=True``:

- ``mm``/``addmm`` ``2·m·k·n``; ``bmm``/``baddbmm`` ``2·b·m·k·n``; ``matmul`` the same with the
  batch dimensions broadcast; ``linear`` ``2·(rows of the input)·k·n``. A vector operand
  (``dot``, ``mv``) is not counted, as FlopCounterMode does not count it.
- ``convolution``/``_convolution``: ``2·N·prod(out spatial)·prod(kernel)·C_out·C_in/groups``,
  the output size from stride, padding and dilation (transposed: the input's spatial size);
  ``convolution_backward`` per its ``output_mask`` (grad input, grad weight), as FlopCounterMode.
- scaled dot-product attention (``scaled_dot_product_attention`` and its flash / efficient /
  cuDNN / CPU flash variants): ``2·b·h·s_q·s_k·(d_q + d_v)``; their backward ops
  ``2·b·h·s_q·s_k·(3·d_q + 2·d_v)``; causal masks are not discounted (as FlopCounterMode).
  FlopCounterMode has no formula for the CPU flash variant and counts it as 0; it is counted
  here with the same formula as on the GPU.
- ops that carry ``kernel_flop`` (torch.compile's Triton kernels): that number, and
  ``kernel_num_gb`` as their bytes.

**Each FLOP counts once**: only the outermost counted op on its thread counts (``aten::linear``
holds ``aten::addmm``; the backward's ``AddmmBackward0`` holds the ``aten::mm`` that count). An
op whose shapes cannot be read (not recorded, malformed, a vector operand) has no FLOPs and is
counted as such, never guessed; an op nested in one that counts, or holding one, is not.

**Joined to kernels**: a kernel belongs to the counted op whose time encloses the runtime or
driver call that launched it (same thread, matched by ``correlation``). The op's FLOPs are
carried by the longest kernel it launched (the GEMM or convolution kernel; its fills, bias or
layout kernels carry none); kernels no counted op launched have no FLOPs and are counted so.
An op's compute time is its kernels' time when it launched any, else its own host time (a CPU
run).

**Achieved and MFU**: per step window (:mod:`profui.analysis.steps`; the device window where
mapped, else the host window), achieved TFLOP/s = the FLOPs of the ops starting in the step's
host window / the step time. MFU = achieved / peak, the peak ``--peak-tflops`` when given, else
the dense datasheet peak (:mod:`profui.analysis.peaks`) of the GPU that ran the FLOP-carrying
kernels at the dominant precision of the FLOPs (precision as :mod:`profui.analysis.precision`
decides it: the carrying kernel's, else the op's input dtypes). With ``--model-flops`` (the
user's FLOPs per step on each rank) MFU = model FLOPs / step time / peak instead. FLOPs are
float64 (exact to 2⁵³ ≈ 9·10¹⁵ per op).

**An MFU above 100% is impossible** and never given as one: ``mfu`` is null, ``mfu_impossible``
holds the ratio and ``mfu_problem`` the likely cause (kernels whose counted FLOPs over their
duration exceed the peak: FLOPs counted for kernels that did not run them; or a wrong peak).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from profui.capture.format.manifest import gpu_key

from .engine import ENGINE, SCAN_ENGINE
from .formatting import plural
from .intervals import Frame, _lazy
from .peaks import Peak, peak_for
from .precision import dtype_precision, kernel_precision
from .steps import in_step

_MM = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::matmul", "aten::linear")
_CONV = ("aten::convolution", "aten::_convolution")
_ATTN = (
    "aten::scaled_dot_product_attention",
    "aten::_scaled_dot_product_flash_attention",
    "aten::_scaled_dot_product_efficient_attention",
    "aten::_scaled_dot_product_cudnn_attention",
    "aten::_scaled_dot_product_flash_attention_for_cpu",
)
_ATTN_BWD = (
    "aten::_scaled_dot_product_flash_attention_backward",
    "aten::_scaled_dot_product_efficient_attention_backward",
    "aten::_scaled_dot_product_cudnn_attention_backward",
    "aten::_scaled_dot_product_flash_attention_for_cpu_backward",
)

#: Op name -> op type, for the ops whose FLOPs come from their shapes.
FLOP_OPS: dict[str, str] = {
    **dict.fromkeys(_MM, "matmul"),
    **dict.fromkeys(_CONV, "conv"),
    "aten::convolution_backward": "conv_backward",
    **dict.fromkeys(_ATTN, "attention"),
    **dict.fromkeys(_ATTN_BWD, "attention_backward"),
}
#: Ops that call others of :data:`FLOP_OPS` (``aten::matmul`` calls ``aten::mm``): of two ops
#: with the same start and length on a thread (a trace in whole µs), the outer one.
_COMPOSITE = ("aten::linear", "aten::matmul", "aten::convolution", "aten::scaled_dot_product_attention")


def _outer_first() -> pl.Expr:
    """0 for a composite op (:data:`_COMPOSITE`), 1 for the others: an op's sort key after start
    and length, so that which one counts is the same in every run, never the sort's tie order
    (then by name, whatever the ops)."""
    return pl.when(pl.col("name").is_in(list(_COMPOSITE))).then(0).otherwise(1)


#: The op type of ops whose FLOPs are their ``kernel_flop`` arg.
KERNEL_FLOP = "kernel_flop"
OP_TYPES = ("matmul", "conv", "conv_backward", "attention", "attention_backward", KERNEL_FLOP)

_THREAD = ["node", "rank", "pid", "tid"]
#: ``Input Dims`` as Polars re-serialises it: a list of lists of integers, nothing else.
_DIMS_RE = r"^\[(\[(\d{1,18}(,\d{1,18})*)?\](,\[(\d{1,18}(,\d{1,18})*)?\])*)?\]$"
#: ``Concrete Inputs``: a list of strings.
_STRINGS_RE = r'^\[("([^"\\]|\\.)*"(,"([^"\\]|\\.)*")*)?\]$'
_INTS_RE = r"^\[\d{1,18}(, ?\d{1,18})*\]$"


def _dim(t: pl.Expr, i: int) -> pl.Expr:
    return t.list.get(i, null_on_oob=True)


def _prod(t: pl.Expr, start: int) -> pl.Expr:
    """Product of ``t[start:]`` (1 when empty)."""
    return t.list.slice(start).list.eval(pl.element().product()).list.first().fill_null(1)


def _mm(a: pl.Expr, b: pl.Expr, batch: bool) -> pl.Expr:
    n = 3 if batch else 2
    ok = (a.list.len() == n) & (b.list.len() == n) & (_dim(a, -1) == _dim(b, -2))
    if batch:
        ok = ok & (_dim(a, 0) == _dim(b, 0))
    f = 2 * _dim(a, -2) * _dim(a, -1) * _dim(b, -1)
    if batch:
        f = f * _dim(a, 0)
    return pl.when(ok).then(f)


def _matmul(a: pl.Expr, b: pl.Expr) -> pl.Expr:
    batch = pl.lit(1, pl.Int64)
    for i in range(8):  # batch dims broadcast, aligned from the right
        da, db = _dim(a, -3 - i).fill_null(1), _dim(b, -3 - i).fill_null(1)
        batch = batch * pl.when(da == 1).then(db).otherwise(da)
    ok = (a.list.len() >= 2) & (b.list.len() >= 2) & (_dim(a, -1) == _dim(b, -2))
    return pl.when(ok).then(2 * batch * _dim(a, -2) * _dim(a, -1) * _dim(b, -1))


def _linear(x: pl.Expr, w: pl.Expr) -> pl.Expr:
    ok = (x.list.len() >= 2) & (w.list.len() == 2) & (_dim(x, -1) == _dim(w, 1))
    rows = x.list.slice(0, x.list.len() - 1).list.eval(pl.element().product()).list.first()
    return pl.when(ok).then(2 * rows * _dim(x, -1) * _dim(w, 0))


def _ints(c: pl.Expr, i: int) -> pl.Expr:
    """Concrete input ``i`` as a list of integers (``"[2, 2]"``), null when it is not one."""
    s = c.list.get(i, null_on_oob=True)
    return pl.when(s.str.contains(_INTS_RE)).then(s.str.extract_all(r"\d+").cast(pl.List(pl.Int64)))


def _conv(x: pl.Expr, w: pl.Expr, c: pl.Expr) -> pl.Expr:
    stride, pad, dil = _ints(c, 3), _ints(c, 4), _ints(c, 5)
    transposed = c.list.get(6, null_on_oob=True)
    spatial = x.list.len() - 2
    ok = (spatial >= 1) & (spatial <= 3) & (w.list.len() == x.list.len())
    out = pl.lit(1, pl.Int64)
    for i in range(3):

        def at(v: pl.Expr, i: int = i) -> pl.Expr:
            return pl.coalesce(_dim(v, i), _dim(v, 0))  # a one-element list applies to every dim

        o = (_dim(x, 2 + i) + 2 * at(pad) - at(dil) * (_dim(w, 2 + i) - 1) - 1) // at(stride) + 1
        out = out * pl.when(pl.lit(i) < spatial).then(o).otherwise(1)
    common = 2 * _dim(x, 0) * _prod(w, 2) * _dim(w, 0) * _dim(w, 1)
    return (
        pl.when(ok & (transposed == "True"))
        .then(common * _prod(x, 2))
        .when(ok & (transposed == "False") & (out > 0))
        .then(common * out)
    )


def _conv_backward(g: pl.Expr, x: pl.Expr, w: pl.Expr, c: pl.Expr) -> pl.Expr:
    transposed = c.list.get(7, null_on_oob=True)
    mask = c.list.get(10, null_on_oob=True).str.extract_all("True|False")
    ok = (
        (x.list.len() >= 3)
        & (g.list.len() == x.list.len())
        & (w.list.len() == x.list.len())
        & transposed.is_in(["True", "False"])
        & (mask.list.len() == 3)
    )
    t = transposed == "True"
    grad_in = pl.when(t).then(_prod(x, 2)).otherwise(_prod(g, 2)) * _dim(g, 0) * _dim(w, 0) * _dim(w, 1)
    grad_w = (
        pl.when(t)
        .then(_dim(g, 1) * _dim(x, 1) * _dim(x, 0) * _prod(x, 2))
        .otherwise(_dim(x, 1) * _dim(g, 1) * _dim(g, 0) * _prod(g, 2))
    )
    m0 = (mask.list.get(0, null_on_oob=True) == "True").cast(pl.Int64)
    m1 = (mask.list.get(1, null_on_oob=True) == "True").cast(pl.Int64)
    return pl.when(ok).then(2 * _prod(w, 2) * (m0 * grad_in + m1 * grad_w))


def _attention(q: pl.Expr, k: pl.Expr, v: pl.Expr, backward: bool) -> pl.Expr:
    ok = (
        (q.list.len() == 4)
        & (k.list.len() == 4)
        & (v.list.len() == 4)
        & (_dim(q, 0) == _dim(k, 0))
        & (_dim(q, 3) == _dim(k, 3))
        & (_dim(k, 2) == _dim(v, 2))
    )
    dq, dv = _dim(q, 3), _dim(v, 3)
    inner = (3 * dq + 2 * dv) if backward else (dq + dv)
    return pl.when(ok).then(2 * _dim(q, 0) * _dim(q, 1) * _dim(q, 2) * _dim(k, 2) * inner)


def _shape_flops(
    name: pl.Expr, dims: pl.Expr, concrete: pl.Expr, present: Sequence[str] | None = None
) -> pl.Expr:
    """FLOPs from the shapes of the op ``name``; ``present``: the op names there are (only their
    formulas go in the plan — the whole set makes Polars' planning the cost)."""
    d = [dims.list.get(i, null_on_oob=True) for i in range(4)]
    e: pl.Expr = pl.lit(None, pl.Int64)
    cases = (
        (("aten::mm",), _mm(d[0], d[1], batch=False)),
        (("aten::addmm",), _mm(d[1], d[2], batch=False)),
        (("aten::bmm",), _mm(d[0], d[1], batch=True)),
        (("aten::baddbmm",), _mm(d[1], d[2], batch=True)),
        (("aten::matmul",), _matmul(d[0], d[1])),
        (("aten::linear",), _linear(d[0], d[1])),
        (_CONV, _conv(d[0], d[1], concrete)),
        (("aten::convolution_backward",), _conv_backward(d[0], d[1], d[2], concrete)),
        (_ATTN, _attention(d[0], d[1], d[2], backward=False)),
        (_ATTN_BWD, _attention(d[1], d[2], d[3], backward=True)),
    )
    for names, f in reversed(cases):
        if present is None or set(names) & set(present):
            e = pl.when(name.is_in(list(names))).then(f).otherwise(e)
    return e


def _member_reader(args: pl.Series, keys: Sequence[str]) -> Callable[[str, str], pl.Expr]:
    """``member(path, key)``: the args' JSON member at ``path`` (named ``key``, one of ``keys``)
    as text, or null without reading any JSON where no op's args can hold it: the key's text is
    in none and none has an escape that could spell it. Each member read is a JSON parse of
    every op's args (five of them: 0.1 s on 53k ops that recorded no shapes)."""
    found = set(
        args.str.extract_many(["\\", *keys], overlapping=True).explode().drop_nulls().unique().to_list()
    )

    def member(path: str, key: str) -> pl.Expr:
        if "\\" in found or key in found:
            return pl.col("args").str.json_path_match(path)
        return pl.lit(None, pl.String)

    return member


def op_flops(events: Frame) -> pl.LazyFrame:
    """Every op that may bear FLOPs (:data:`FLOP_OPS`, or with a ``kernel_flop`` arg) that is
    not nested in one that counts, with its FLOPs (null: none could be read).

    Columns: node, rank, pid, tid, ts, dur, name, op_type, precision (of its input dtypes),
    flops (float64), bytes (``kernel_num_gb``, else null), has_shapes (``Input Dims`` or
    ``kernel_flop`` recorded, readable or not). Only these few ops' args are parsed.
    """
    ev = _lazy(events)
    args = pl.col("args")
    cand = ev.filter(
        pl.col("kind") == "cpu_op",
        pl.col("name").is_in(list(FLOP_OPS)) | args.str.contains('"kernel_flop"', literal=True),
    ).select(*_THREAD, "ts", "dur", "name", "args")
    cand_rows = cand.collect(engine=SCAN_ENGINE)
    present = cand_rows["name"].unique().to_list()
    member = _member_reader(
        cand_rows.get_column("args"),
        ("Input Dims", "Concrete Inputs", "kernel_flop", "kernel_num_gb", "Input type"),
    )
    cand = cand_rows.lazy()
    dims = member("$['Input Dims']", "Input Dims")
    conc = member("$['Concrete Inputs']", "Concrete Inputs")
    kflop = member("$.kernel_flop", "kernel_flop").cast(pl.Float64, strict=False)
    kgb = member("$.kernel_num_gb", "kernel_num_gb").cast(pl.Float64, strict=False)
    types = member("$['Input type']", "Input type")
    ops = cand.with_columns(
        pl.when(dims.str.contains(_DIMS_RE)).then(dims).alias("_dims"),
        (dims.is_not_null() | kflop.is_not_null()).alias("has_shapes"),
        pl.when(conc.str.contains(_STRINGS_RE)).then(conc).alias("_conc"),
        pl.when(types.str.contains(_STRINGS_RE)).then(types).alias("_types"),
        pl.when(kflop >= 0).then(kflop).alias("_kflop"),
        pl.when(kgb >= 0).then(kgb * 1e9).alias("bytes"),
    ).with_columns(
        pl.col("_dims").str.json_decode(pl.List(pl.List(pl.Int64))),
        pl.col("_conc").str.json_decode(pl.List(pl.String)),
    )
    ops = ops.with_columns(
        pl.when(pl.col("_kflop").is_not_null())
        .then(pl.lit(KERNEL_FLOP))
        .otherwise(pl.col("name").replace_strict(FLOP_OPS, default=None, return_dtype=pl.String))
        .alias("op_type"),
        pl.coalesce(
            pl.col("_kflop"),
            _shape_flops(pl.col("name"), pl.col("_dims"), pl.col("_conc"), present).cast(pl.Float64),
        ).alias("flops"),
        dtype_precision(pl.col("_types")).alias("precision"),
        (pl.col("ts") + pl.col("dur")).alias("_end"),
    ).drop("args", "_dims", "_conc", "_types", "_kflop")
    # collected here: the formulas make a large plan, which the three uses below would each
    # make Polars optimise again (that, not the few rows, was most of this function's time)
    op_rows = ops.collect(engine=ENGINE)
    cols = [*_THREAD, "ts", "dur", "name", "op_type", "precision", "flops", "bytes", "has_shapes"]
    if op_rows.get_column("flops").is_null().all():  # none counts, none is nested in one that does
        return op_rows.lazy().select(cols).sort([*_THREAD, "ts"])
    ops = op_rows.lazy()
    # outermost among the ops with FLOPs: no earlier-starting one on the thread ends at or after it
    valid = (
        ops.filter(pl.col("flops").is_not_null())
        .sort(
            [*_THREAD, "ts", pl.col("dur"), _outer_first(), "name"],
            descending=[False] * 5 + [True, False, False],
        )
        .with_columns(pl.col("_end").cum_max().over(_THREAD).alias("_reach"))
        .with_columns(pl.col("_reach").shift(1).over(_THREAD).alias("_before"))
    )
    counted = valid.filter(pl.col("_before").is_null() | (pl.col("_before") < pl.col("_end")))
    # ops without FLOPs count as such unless a counted op encloses them
    reach = valid.select(*_THREAD, pl.col("ts").alias("_vts"), "_reach").sort("_vts")
    missing = (
        ops.filter(pl.col("flops").is_null())
        .sort("ts")
        .join_asof(
            reach, left_on="ts", right_on="_vts", by=_THREAD, strategy="backward", check_sortedness=False
        )
        .filter(pl.col("_reach").is_null() | (pl.col("_reach") < pl.col("_end")))
        # nor when it holds one: its FLOPs are counted there
        .join_asof(
            valid.select(*_THREAD, pl.col("ts").alias("_inner")).sort("_inner"),
            left_on="ts",
            right_on="_inner",
            by=_THREAD,
            strategy="forward",
            check_sortedness=False,
        )
        .filter(pl.col("_inner").is_null() | (pl.col("_inner") >= pl.col("_end")))
    )
    return pl.concat([counted.select(cols), missing.select(cols)]).sort([*_THREAD, "ts"])


def kernel_flops(events: Frame, ops: pl.DataFrame, kernels: Frame | None = None) -> pl.LazyFrame:
    """Every kernel with the counted op that launched it (``op`` = its row in ``ops``, null when
    none) and the FLOPs it carries (see the module docstring; null when none).

    Columns: node, rank, device, stream, name, ts, dur, op, flops, bytes, precision (the
    kernel's, by :func:`profui.analysis.precision.kernel_precision`; ``kernels`` is its frame,
    as the precision stage writes it, where the caller has it).
    """
    ev = _lazy(events)
    kernels = _lazy(kernels) if kernels is not None else kernel_precision(ev)
    kernels = kernels.select(
        "node", "rank", "device", "stream", "name", "ts", "dur", "correlation", "precision"
    )
    flop_of = (
        ops.lazy()
        .with_row_index("op")
        .select(pl.col("op").cast(pl.Int64), pl.col("flops").alias("_f"), pl.col("bytes").alias("_b"))
    )
    if ops.get_column("flops").is_null().all():  # no op has FLOPs to give (no shapes recorded)
        k = kernels.with_columns(pl.lit(None, pl.Int64).alias("op"))
    else:
        k = kernels.join(_linked(ev, ops), on=["node", "rank", "correlation"], how="left")
    k = (
        k.join(flop_of, on="op", how="left")
        .sort(["op", "dur", "ts"], descending=[False, True, False], nulls_last=True)
        .with_columns((pl.col("op").is_not_null() & pl.col("op").is_first_distinct()).alias("_carrier"))
        .with_columns(
            pl.when("_carrier").then(pl.col("_f")).alias("flops"),
            pl.when("_carrier").then(pl.col("_b")).alias("bytes"),
        )
    )
    return k.select(
        "node", "rank", "device", "stream", "name", "ts", "dur", "op", "flops", "bytes", "precision"
    )


def _linked(ev: pl.LazyFrame, ops: pl.DataFrame) -> pl.LazyFrame:
    """``node, rank, correlation, op``: each launch call with the counted op of ``ops`` (its
    row) that wraps it on its thread."""
    launches = (
        ev.filter(pl.col("kind").is_in(["runtime", "driver"]), pl.col("correlation").is_not_null())
        .select(*_THREAD, pl.col("ts").alias("_lts"), pl.col("dur").alias("_ldur"), "correlation")
        .unique(subset=["node", "rank", "correlation"], keep="first")
    )
    counted = (
        ops.lazy()
        .with_row_index("op")
        .filter(pl.col("flops").is_not_null())
        .select(
            *_THREAD,
            pl.col("ts").alias("_ots"),
            (pl.col("ts") + pl.col("dur")).alias("_oend"),
            pl.col("op").cast(pl.Int64),
        )
        .sort("_ots")
    )
    return (
        launches.sort("_lts")
        .join_asof(
            counted, left_on="_lts", right_on="_ots", by=_THREAD, strategy="backward", check_sortedness=False
        )
        .filter(pl.col("_oend") >= pl.col("_lts") + pl.col("_ldur"))
        .select("node", "rank", "correlation", "op")
    )


def _tflops(flops: pl.Expr, ns: pl.Expr) -> pl.Expr:
    """FLOPs over ns as TFLOP/s (null without time)."""
    return pl.when(ns > 0).then(flops / ns / 1e3)


@dataclass
class Flops:
    """The ``flops`` stage's tables (see :func:`analyse`)."""

    ops: pl.DataFrame
    op_types: pl.DataFrame
    kernels: pl.DataFrame
    steps: pl.DataFrame
    totals: pl.DataFrame


_FLOP_PRECISIONS = ("FP32", "TF32", "FP16", "BF16", "FP8")


def _dominant(frame: pl.DataFrame, weight: str) -> str | None:
    """The precision with the most ``weight`` among those a peak may exist for."""
    f = frame.filter(pl.col("precision").is_in(list(_FLOP_PRECISIONS)), pl.col(weight) > 0)
    if f.height == 0:
        return None
    g = (
        f.group_by("precision")
        .agg(pl.col(weight).sum())
        .sort([weight, "precision"], descending=[True, False])
    )
    return str(g["precision"][0])


def analyse(
    events: Frame,
    windows: pl.DataFrame,
    gpus: Sequence[dict[str, Any]],
    peak_tflops: float = 0.0,
    model_flops: float = 0.0,
    kernels: Frame | None = None,
) -> Flops:
    """The FLOPs tables of a trace (see the module docstring).

    ``kernels``: every kernel's precision as the precision stage writes it (computed here when
    not given).

    ``windows`` are the steps stage's step windows, ``gpus`` the manifest's GPUs (Kineto's
    ``deviceProperties`` with ``node``), ``peak_tflops`` the user's peak (0: from the table),
    ``model_flops`` the user's FLOPs per step on each rank (0: not given).

    - ``ops``: per op name, op type and precision: count, flops, time_ns (compute time: its
      kernels' time, else its host time), tflops, share of the counted FLOPs; ops without
      FLOPs are rows with null flops.
    - ``op_types``: per op type with counted FLOPs (:func:`op_type_shares`): flops, time_ns,
      tflops, share of the counted FLOPs.
    - ``kernels``: per kernel name, time first: count, flops_count (instances carrying FLOPs),
      flops, time_ns, flops_time_ns, tflops, bytes, intensity (FLOP/byte, where both are known),
      share of kernel time.
    - ``steps``: per node, rank and step: ops, flops, step_ns, tflops, mfu.
    - ``totals``: one row, the counts, the achieved TFLOP/s per step, the MFU, which definition
      and which peak (and its source) were used, and a note saying what is missing; an MFU
      above 100% is null with ``mfu_impossible`` and ``mfu_problem`` (its likely cause).
    """
    o, k = flop_rows(events, kernels)
    return flop_tables(o, k, windows, gpus, peak_tflops, model_flops)


def flop_rows(events: Frame, kernels: Frame | None = None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The rows :func:`flop_tables` reads: each op that may bear FLOPs (:func:`op_flops`) with
    its compute time (``compute_ns``: its kernels', else its own) and the precision of its FLOPs,
    and each kernel with the FLOPs it carries (:func:`kernel_flops`); only the columns read.

    An op's kernels are its own rank's, so a job's rows are its ranks' rows one after another
    (a run by ranks sends them: :mod:`profui.analysis.jobreduce`).
    """
    ev = _lazy(events)
    ops = op_flops(ev).collect(engine=ENGINE)
    has_kernels = (
        ev.filter(pl.col("kind") == "kernel", pl.col("device") >= 0)
        .select(pl.len())
        .collect(engine=ENGINE)
        .item()
    )
    if has_kernels:
        k = kernel_flops(ev, ops, kernels).collect(engine=ENGINE)
    else:
        k = pl.DataFrame(
            schema={
                "node": pl.String,
                "rank": pl.Int64,
                "device": pl.Int32,
                "stream": pl.Int32,
                "name": pl.String,
                "ts": pl.Int64,
                "dur": pl.Int64,
                "op": pl.Int64,
                "flops": pl.Float64,
                "bytes": pl.Float64,
                "precision": pl.String,
            }
        )
    # per op: compute time (its kernels', else its own) and the precision of its FLOPs
    per_op = (
        k.filter(pl.col("op").is_not_null())
        .group_by("op")
        .agg(
            pl.col("dur").sum().alias("_kns"),
            pl.col("precision").filter(pl.col("flops").is_not_null()).first().alias("_kprec"),
        )
    )
    o = (
        ops.with_row_index("op")
        .with_columns(pl.col("op").cast(pl.Int64))
        .join(per_op, on="op", how="left")
        .with_columns(
            pl.coalesce("_kns", "dur").alias("compute_ns"),
            pl.when(pl.col("_kprec").is_in(list(_FLOP_PRECISIONS)))
            .then(pl.col("_kprec"))
            .otherwise(pl.col("precision"))
            .alias("precision"),
        )
    )
    return (
        o.select("node", "rank", "ts", "name", "op_type", "precision", "flops", "compute_ns", "has_shapes"),
        k.select("node", "device", "name", "dur", "flops", "bytes", "precision"),
    )


def flop_tables(
    o: pl.DataFrame,
    k: pl.DataFrame,
    windows: pl.DataFrame,
    gpus: Sequence[dict[str, Any]],
    peak_tflops: float = 0.0,
    model_flops: float = 0.0,
) -> Flops:
    """The FLOPs tables (:func:`analyse`) from the op and kernel rows of :func:`flop_rows`."""
    total_flops = float(o["flops"].sum() or 0.0)
    ops_table = (
        o.group_by("name", "op_type", "precision")
        .agg(
            pl.len().cast(pl.Int64).alias("count"),
            pl.col("flops").sum().alias("flops"),
            pl.col("flops").null_count().cast(pl.Int64).alias("without_flops"),
            pl.col("compute_ns").filter(pl.col("flops").is_not_null()).sum().alias("time_ns"),
        )
        .with_columns(
            pl.when(pl.col("without_flops") == pl.col("count"))
            .then(None)
            .otherwise(pl.col("flops"))
            .alias("flops")
        )
        .with_columns(
            _tflops(pl.col("flops"), pl.col("time_ns")).alias("tflops"),
            (pl.col("flops") / total_flops if total_flops > 0 else pl.lit(None, pl.Float64)).alias("share"),
        )
        .sort([pl.col("flops").fill_null(-1), "name"], descending=[True, False])
    )
    ktime = float(k["dur"].sum() or 0)
    kernels_table = (
        k.group_by("name")
        .agg(
            pl.len().cast(pl.Int64).alias("count"),
            pl.col("flops").count().cast(pl.Int64).alias("flops_count"),
            pl.col("flops").sum().alias("flops"),
            pl.col("dur").sum().alias("time_ns"),
            pl.col("dur").filter(pl.col("flops").is_not_null()).sum().alias("flops_time_ns"),
            pl.col("bytes").sum().alias("bytes"),
            pl.col("bytes").count().alias("_nb"),
        )
        .with_columns(
            pl.when(pl.col("flops_count") > 0).then(pl.col("flops")).alias("flops"),
            pl.when((pl.col("_nb") > 0) & (pl.col("_nb") == pl.col("flops_count")))
            .then(pl.col("bytes").round().cast(pl.Int64))
            .alias("bytes"),
        )
        .with_columns(
            _tflops(pl.col("flops"), pl.col("flops_time_ns")).alias("tflops"),
            pl.when(pl.col("bytes") > 0).then(pl.col("flops") / pl.col("bytes")).alias("intensity"),
            (pl.col("time_ns") / ktime if ktime > 0 else pl.lit(None, pl.Float64)).alias("share"),
        )
        .drop("_nb")
        .sort(["time_ns", "name"], descending=[True, False])
    )
    peak, why = _peak(o, k, gpus, peak_tflops)
    # no op of the trace counted (no shapes recorded): no throughput and no MFU from it, not 0
    counted = o.height > 0 and bool(o["flops"].is_not_null().any())
    steps_table = _steps(o, windows, peak, model_flops, counted)
    totals = _totals(o, k, steps_table, peak, why, model_flops, counted)
    if peak is not None:
        sheet = _peak(o, k, gpus, 0.0)[0] if peak.source == "--peak-tflops" else peak
        totals, steps_table = _flag_impossible(totals, steps_table, k, peak, sheet, model_flops)
    return Flops(
        ops=ops_table,
        op_types=op_type_shares(ops_table),
        kernels=kernels_table,
        steps=steps_table,
        totals=totals,
    )


def op_type_shares(ops: pl.DataFrame) -> pl.DataFrame:
    """Per op type of the ``ops`` table's counted rows (null ``flops`` out): its FLOPs, compute
    time (``time_ns``: its ops' kernels', else their own), achieved TFLOP/s over that time, and
    share of all counted FLOPs; most FLOPs first, then by type."""
    return (
        ops.filter(pl.col("flops").is_not_null())
        .group_by("op_type")
        .agg(pl.col("flops").sum(), pl.col("time_ns").sum())
        .with_columns(
            _tflops(pl.col("flops"), pl.col("time_ns")).alias("tflops"),
            (pl.col("flops") / pl.col("flops").sum()).alias("share"),
        )
        .sort(["flops", "op_type"], descending=[True, False])
    )


def _flag_impossible(
    totals: pl.DataFrame,
    steps: pl.DataFrame,
    kernels: pl.DataFrame,
    peak: Peak,
    sheet: Peak | None,
    model_flops: float,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """An MFU above 100% is no MFU: no device runs faster than its peak. The totals' ``mfu``
    (and each step's above 1) becomes null, ``mfu_impossible`` keeps the ratio and
    ``mfu_problem`` says it is impossible and its likely cause: a peak given below the
    datasheet's (``sheet``) that no kernel exceeds, the model FLOPs given, or FLOPs counted for
    kernels that could not have run them in their time (a carrying kernel's FLOPs over its
    duration above the peak)."""
    mfu = totals["mfu"][0]
    steps = steps.with_columns(pl.when(pl.col("mfu") <= 1.0).then(pl.col("mfu")).alias("mfu"))
    if mfu is None or mfu <= 1.0:
        return totals, steps
    from .formatting import fmt_pct, fmt_tflops

    carrying = kernels.filter(pl.col("flops").is_not_null(), pl.col("dur") > 0)
    fast = carrying.filter(pl.col("flops") / pl.col("dur") / 1e3 > peak.tflops)
    the_peak = f"the peak {fmt_tflops(peak.tflops)}" + (
        " given (--peak-tflops)"
        if peak.source == "--peak-tflops"
        else f" ({' '.join(x for x in (peak.gpu, peak.precision) if x)} dense)"
    )
    sheet_fast = (
        carrying.filter(pl.col("flops") / pl.col("dur") / 1e3 > sheet.tflops).height if sheet else None
    )
    if sheet is not None and sheet.tflops > peak.tflops and sheet_fast == 0 and model_flops <= 0:
        cause = (
            f"the peak given is below the {sheet.gpu} {sheet.precision} dense peak"
            f" {fmt_tflops(sheet.tflops)}, which no kernel exceeds: a wrong peak"
        )
        problem = f"MFU {fmt_pct(mfu)} is impossible (above 100%): {cause}"
    elif model_flops > 0:
        cause = "the model FLOPs given (--model-flops) are more than a step can run"
    elif fast.height:
        worst = fast.sort(pl.col("flops") / pl.col("dur"), descending=True).row(0, named=True)
        cause = (
            f"FLOPs are counted for kernels that did not run them: {plural(fast.height, 'kernel')} of"
            f" {carrying.height:,} would run above the peak (up to"
            f" {fmt_tflops(worst['flops'] / worst['dur'] / 1e3)}, {worst['name'][:60]})"
        )
    else:
        cause = "kernels running at once add up to more than one device's peak"
    if "a wrong peak" not in cause:
        problem = (
            f"MFU {fmt_pct(mfu)} is impossible (above 100%): {cause}; or {the_peak} is not this device's"
        )
    totals = totals.with_columns(
        pl.lit(None, pl.Float64).alias("mfu"),
        pl.lit(float(mfu), pl.Float64).alias("mfu_impossible"),
        pl.lit(problem).alias("mfu_problem"),
    )
    return totals, steps


def _peak(
    ops: pl.DataFrame, kernels: pl.DataFrame, gpus: Sequence[dict[str, Any]], peak_tflops: float
) -> tuple[Peak | None, str]:
    """The peak MFU divides by, or None and why there is none."""
    carrying = kernels.filter(pl.col("flops").is_not_null())
    precision = _dominant(ops.filter(pl.col("flops").is_not_null()), "flops")
    if precision is None and kernels.height:  # no FLOPs counted: the precision of kernel time
        precision = _dominant(kernels, "dur")
    devices = (carrying if carrying.height else kernels).select("node", "device").unique().rows()
    by_id = {gpu_key(g): g for g in gpus if isinstance(g, dict)}
    listed = [by_id.get((n, d), {}) for n, d in devices]
    names = sorted({str(g.get("name")) for g in listed if g.get("name")})
    if peak_tflops > 0:
        gpu = names[0] if len(names) == 1 else ""
        return Peak(float(peak_tflops), gpu, precision or "", "--peak-tflops"), ""
    if not devices:
        return None, "no peak known: the FLOPs ran on the host, whose peak is not known (give --peak-tflops)"
    if precision is None:
        return None, "no peak known: the precision of the FLOPs is unknown (give --peak-tflops)"
    peaks = {peak_for(g, precision) for g in listed}
    if len(peaks) == 1 and None not in peaks:
        return peaks.pop(), ""
    if len(peaks) > 1 and None not in peaks:
        return None, f"no peak known: the GPUs differ ({', '.join(names)}; give --peak-tflops)"
    if not names:
        return None, f"no {precision} peak known: deviceProperties names no device (give --peak-tflops)"
    return None, f"no {precision} peak known for {', '.join(names)} (give --peak-tflops)"


def _steps(
    ops: pl.DataFrame, windows: pl.DataFrame, peak: Peak | None, model_flops: float, counted: bool
) -> pl.DataFrame:
    w = windows.select(
        "node", "rank", "step", "cpu_start_ns", "cpu_end_ns", pl.col("dur_ns").alias("step_ns")
    )
    inside = (
        in_step(ops.filter(pl.col("flops").is_not_null()), w)
        .group_by("node", "rank", "step")
        .agg(pl.len().cast(pl.Int64).alias("ops"), pl.col("flops").sum().alias("flops"))
        .collect(engine=ENGINE)
    )
    s = (
        w.join(inside, on=["node", "rank", "step"], how="left")
        .with_columns(pl.col("ops").fill_null(0), pl.col("flops").fill_null(0.0))
        .with_columns(
            (_tflops(pl.col("flops"), pl.col("step_ns")) if counted else pl.lit(None, pl.Float64)).alias(
                "tflops"
            )
        )
    )
    if peak is None or (not counted and model_flops <= 0):
        mfu = pl.lit(None, pl.Float64)
    elif model_flops > 0:
        mfu = _tflops(pl.lit(float(model_flops)), pl.col("step_ns")) / peak.tflops
    else:
        mfu = pl.col("tflops") / peak.tflops
    return (
        s.with_columns(mfu.alias("mfu"))
        .select("node", "rank", "step", "ops", "flops", "step_ns", "tflops", "mfu")
        .sort("node", "rank", "step")
    )


def _totals(
    ops: pl.DataFrame,
    kernels: pl.DataFrame,
    steps: pl.DataFrame,
    peak: Peak | None,
    why: str,
    model_flops: float,
    any_counted: bool,
) -> pl.DataFrame:
    counted = ops.filter(pl.col("flops").is_not_null())
    carrying = kernels.filter(pl.col("flops").is_not_null())
    step_ns = int(steps["step_ns"].sum() or 0)
    step_flops = float(steps["flops"].sum() or 0.0)
    tflops = step_flops / step_ns / 1e3 if step_ns > 0 and any_counted else None
    definition = "model" if model_flops > 0 else "counted"
    mfu = None
    if peak is not None and step_ns > 0:
        rate = float(model_flops) * steps.height / step_ns / 1e3 if model_flops > 0 else tflops
        mfu = rate / peak.tflops if rate is not None else None
    notes = []
    unrecorded = int((~ops["has_shapes"]).sum()) if ops.height else 0
    if unrecorded:
        notes.append(
            f"{plural(unrecorded, 'op')} recorded no shapes (record the trace with record_shapes=True)"
        )
    if ops.height - counted.height > unrecorded:
        unreadable = ops.height - counted.height - unrecorded
        have = "have" if unreadable > 1 else "has"
        notes.append(f"{plural(unreadable, 'op')} with unreadable shapes {have} no FLOPs")
    if why:
        notes.append(why)
    return pl.DataFrame(
        {
            "flops": [float(counted["flops"].sum() or 0.0)],
            "counted_ops": [counted.height],
            "ops_without_flops": [ops.height - counted.height],
            "ops_without_shapes": [unrecorded],
            "kernels": [kernels.height],
            "kernels_with_flops": [carrying.height],
            "kernel_ns": [int(kernels["dur"].sum() or 0)],
            "kernel_ns_without_flops": [int(kernels["dur"].sum() or 0) - int(carrying["dur"].sum() or 0)],
            "steps": [steps.height],
            "step_flops": [step_flops],
            "step_ns": [step_ns],
            "tflops": [tflops],
            "precision": [
                peak.precision if peak is not None and peak.precision else _dominant(counted, "flops")
            ],
            "definition": [definition],
            "model_flops": [float(model_flops) if model_flops > 0 else None],
            "peak_tflops": [peak.tflops if peak is not None else None],
            "peak_gpu": [peak.gpu if peak is not None else None],
            "peak_source": [peak.source if peak is not None else None],
            "mfu": [mfu],
            "mfu_impossible": [None],
            "mfu_problem": [""],
            "note": ["; ".join(notes)],
        },
        schema_overrides={
            "tflops": pl.Float64,
            "model_flops": pl.Float64,
            "peak_tflops": pl.Float64,
            "mfu": pl.Float64,
            "mfu_impossible": pl.Float64,
            "precision": pl.String,
            "peak_gpu": pl.String,
            "peak_source": pl.String,
        },
    )
