"""Kernel precision: FP32 / TF32 / FP16 / BF16 / FP8 / INT8 / INT32 / other / unknown shares.

Which rule decides, per kernel (column ``rule``):

0. ``kernel_name`` — first, kernels that move bytes rather than compute are set apart by name
   (:data:`_BYTE_MOVERS`): NCCL/RCCL collectives (communication's one rule,
   :data:`~profui.analysis.comm.COMM_PATTERN`: ``ncclKernel_AllReduce_RING_LL_Sum_float``,
   ``ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t``, ``ncclDevKernel_SendRecv``) are
   ``communication``; memcpy/memset kernels and PyTorch's type-erased copies
   (``CatArrayBatchedCopy_aligned16_contig<OpaqueType<4u>, …>``) are ``memory``. Their time
   takes no part in the precision shares (:data:`EXCLUDED`): an ``_int8_t`` NCCL kernel moves
   raw bytes, and a ``float`` AllReduce or a recorded op dtype says nothing about the arithmetic
   of the model, so neither the launching op's dtypes nor the name's type decide for them.
1. ``input_dtypes`` — the launching CPU op's input dtypes, when the trace recorded them
   (``record_shapes=True`` puts ``Input type`` in the op's args). The op is found by the
   kernel's ``external_id`` (Kineto copies the op's External id onto its kernels), else through
   the runtime/driver launch with the same ``correlation`` and *its* ``external_id``, else
   (old traces whose ids do not link) the CPU op that started last before the launch on the
   launching thread and still encloses it. Among the
   op's tensor inputs the narrowest floating type wins (FP8 > BF16 > FP16 > FP32), then FP64
   (reported as ``other``), then INT8, INT32; other integer/bool inputs give ``other``. An
   FP32 op whose kernel the name rules call TF32 is TF32 (the dtype cannot show tensor-core
   TF32: ``aten::mm`` on float tensors runs ``cutlass_80_tensorop_s1688gemm`` on an A100).
2. ``kernel_name`` — otherwise, the first of :data:`_NAME_RULES` that matches the lower-cased
   name. Families that spell the type in a fixed place go first (cuBLASLt ``nvjet_<A><compute>
   <D>_``: ``nvjet_tst`` BF16, ``nvjet_hsh`` FP16, ``nvjet_sss`` FP32, ``nvjet_sss_tf32`` TF32;
   AMD Tensile ``Cijk_Ailk_Bljk_<type>``: ``SB`` FP32, ``H…`` FP16, ``B…`` BF16); then type names
   anywhere in the name — template arguments and the cuBLAS/cutlass/xmma/cuDNN type fields
   (``<c10::BFloat16>``, ``cutlass::bfloat16_t``, ``sm80_xmma_gemm_f16f16_…``,
   ``cutlass_70_wmma_tensorop_f16_s161616gemm_f16``, ``tf32f32``, ``tfloat32_t``); then
   tensor-core instruction shapes that carry no type name: ``s1688``/``s1684`` (FP32
   accumulate, 16x8x8 / 16x8x4 MMA) are TF32 — the half variants always add ``f16``/``bf16``
   (``cutlass_75_tensorop_bf16_s1688gemm_bf16``), decided above — while ``s16816``, ``h1688``,
   ``h884`` … exist only for half inputs and, without ``bf16`` in the name, are FP16; then
   single-precision families (``ampere_sgemm``, ``cudnn_infer_volta_scudnn``, ``ampere_gcgemm``
   complex single, ``sm80_xmma_gemm_f32f32_…_ffma``, ``<float>``), before FP64 (``double``,
   reported as ``other``) so that, as with dtypes, the narrowest floating type named wins
   (``uniform_and_transform<float, …>(…, double, double, …)`` is FP32); last, the first integer
   template or lambda argument (``FillFunctor<int>`` INT32, ``CUDAFunctorOnSelf_add<long>``,
   ``direct_copy_kernel_cuda … [lambda(long)]`` other), which count only when no floating type
   is named. A typed copy (``direct_copy_kernel_cuda`` with a
   ``float`` lambda, ``CatArrayBatchedCopy<float, …>``) counts under its type: it may convert,
   and its element width is the model's precision choice.
3. ``none`` — neither says anything: ``unknown`` (Triton kernels, ``cask_cudnn`` offset helpers).

Only real kernels (``kind == "kernel"`` on a device) are classified; exact ns.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from .comm import COMM_PATTERN
from .engine import ENGINE, SCAN_ENGINE
from .intervals import Frame, _lazy

PRECISIONS = ("FP32", "TF32", "FP16", "BF16", "FP8", "INT8", "INT32", "other", "unknown")

#: Input-type strings PyTorch writes (``str(dtype)`` of the C++ scalar type) -> precision rank.
_DTYPE_RANK: dict[str, int] = {}
for _names, _rank in (
    (
        (
            "c10::Float8_e4m3fn",
            "c10::Float8_e5m2",
            "c10::Float8_e4m3fnuz",
            "c10::Float8_e5m2fnuz",
            "c10::Float8_e8m0fnu",
            "Float8_e4m3fn",
            "Float8_e5m2",
        ),
        0,
    ),
    (("c10::BFloat16", "BFloat16", "bfloat16"), 1),
    (("c10::Half", "Half", "half"), 2),
    (("float", "c10::complex<float>"), 3),
    (("double", "c10::complex<double>"), 4),
    (("signed char", "unsigned char", "c10::qint8", "c10::quint8", "int8", "uint8"), 5),
    (("int", "unsigned int", "c10::qint32", "int32"), 6),
    (("long int", "long", "short int", "short", "bool", "c10::quint4x2", "int64", "unsigned short"), 7),
):
    for _n in _names:
        _DTYPE_RANK[_n] = _rank
_RANK_PRECISION = ["FP8", "BF16", "FP16", "FP32", "other", "INT8", "INT32", "other"]

#: Kernels that move bytes, not numbers, and take no part in the precision shares; see rule 0.
EXCLUDED = ("communication", "memory")

#: (class, pattern on the lower-cased kernel name) for rule 0, after communication kernels
#: (:data:`~profui.analysis.comm.COMM_PATTERN`, on the name as written).
_BYTE_MOVERS: tuple[tuple[str, str], ...] = (("memory", r"memcpy|memset|opaquetype<"),)

_NVJET = r"^nvjet_(?:sm\d+_)?"  # cuBLASLt nvjet_[smNN_]<A type><compute type><D type>_...
_TENSILE = r"^cijk_a[a-z]+_b[a-z]+_"  # AMD Tensile Cijk_A<idx>_B<idx>_<type code>_...

#: (precision, pattern on the lower-cased kernel name) for rule 2, first match wins.
_NAME_RULES: tuple[tuple[str, str], ...] = (
    ("TF32", _NVJET + r"s\w*tf32"),
    ("FP16", _NVJET + "h"),
    ("BF16", _NVJET + "t"),
    ("FP32", _NVJET + "s"),
    ("FP32", _TENSILE + "s"),
    ("FP16", _TENSILE + "h"),
    ("BF16", _TENSILE + "b"),
    ("INT8", _TENSILE + "i8"),
    ("other", _TENSILE + "[dz]"),
    ("FP8", r"fp8|float8|e4m3|e5m2"),
    ("BF16", r"bf16|bfloat16"),
    ("FP16", r"fp16|f16|half"),
    ("TF32", r"tf32|tfloat32"),
    ("TF32", r"s1688|s1684"),
    ("FP16", r"hgemm|h884|h1688|h16816|s884|s16816|s161616"),
    ("INT8", r"int8|imma|igemm|i8i8|i8816|i16832|i16864"),
    ("INT32", r"int32"),
    ("FP32", r"sgemm|scudnn|cgemm|ffma|fp32|f32|float"),
    ("other", r"double|dgemm|zgemm|fp64|f64"),
)

#: The first integer template or lambda argument named, for names no rule above decides.
_INTEGER_ARG = r"(?:<|lambda\()(int|long int|long|bool)[,>)]"
_INTEGER_PRECISION = {"int": "INT32", "long int": "other", "long": "other", "bool": "other"}


def _first_match(name: pl.Expr, rules: tuple[tuple[str, str], ...]) -> pl.Expr:
    """The label of the first ``(label, pattern)`` of ``rules`` whose pattern the lower-cased
    ``name`` contains; null when none does."""
    low = name.str.to_lowercase()
    expr: pl.Expr = pl.lit(None, pl.String)
    for label, pattern in reversed(rules):
        expr = pl.when(low.str.contains(pattern)).then(pl.lit(label)).otherwise(expr)
    return expr


def _name_precision(name: pl.Expr) -> pl.Expr:
    """Rule 2: the precision a kernel name says (null when it says none)."""
    integer = (
        name.str.to_lowercase()
        .str.extract(_INTEGER_ARG, 1)
        .replace_strict(_INTEGER_PRECISION, default=None, return_dtype=pl.String)
    )
    return pl.coalesce(_first_match(name, _NAME_RULES), integer)


def dtype_precision(types_json: pl.Expr) -> pl.Expr:
    """Rule 1: the precision an op's ``Input type`` JSON says (the narrowest floating type among
    its inputs; null when none is known)."""
    return _dtype_precision(types_json)


def _dtype_precision(types_json: pl.Expr) -> pl.Expr:
    ranks = types_json.str.json_decode(pl.List(pl.String)).list.eval(
        pl.element().replace_strict(_DTYPE_RANK, default=None, return_dtype=pl.Int64)
    )
    best = ranks.list.drop_nulls().list.min()
    return best.replace_strict(
        list(range(len(_RANK_PRECISION))), _RANK_PRECISION, default=None, return_dtype=pl.String
    )


def kernel_precision(events: Frame) -> pl.LazyFrame:
    """Every kernel with ``precision`` and the ``rule`` that decided it (see module docstring).

    Rows are in time order per node and rank. Columns: node, rank, device, stream, name, ts, dur,
    correlation, external_id, op_name
    (the launching CPU op that recorded input dtypes, when found), input_types (its
    ``Input type`` JSON), precision, rule. Only ops that recorded dtypes are considered, so
    the op found around a launch is the innermost *typed* one.
    """
    ev = _lazy(events)
    keys = ["node", "rank"]
    kernels = ev.filter(pl.col("kind") == "kernel", pl.col("device") >= 0).select(
        *keys, "device", "stream", "name", "ts", "dur", "correlation", "external_id"
    )
    # only ops that recorded input dtypes can decide anything (cheap substring test before JSON)
    # (collected: read three times below, and each read would test every op's args again)
    typed = (
        ev.filter(pl.col("kind") == "cpu_op", pl.col("args").str.contains('"Input type"', literal=True))
        .select(*keys, "pid", "tid", "ts", "dur", "external_id", "name", "args")
        .collect(engine=SCAN_ENGINE)
    )
    if typed.is_empty():
        # no op recorded dtypes (record_shapes off; 3 of the 4 largest shared traces): nothing
        # to link, every kernel goes by its name
        k = kernels.with_columns(
            pl.lit(None, pl.String).alias("op_name"), pl.lit(None, pl.String).alias("input_types")
        )
    else:
        k = _link_typed_ops(ev, kernels, typed.lazy(), keys)
    # name rules once per distinct name (kernel names are long and repeat a lot)
    names = (
        kernels.select("name")
        .unique()
        .with_columns(
            pl.when(pl.col("name").str.contains(COMM_PATTERN))
            .then(pl.lit("communication"))
            .otherwise(_first_match(pl.col("name"), _BYTE_MOVERS))
            .alias("_m"),
            _name_precision(pl.col("name")).alias("_n"),
        )
    )
    by_dtype = _dtype_precision(pl.col("input_types"))
    by_dtype = (
        pl.when((by_dtype == "FP32") & (pl.col("_n") == "TF32")).then(pl.lit("TF32")).otherwise(by_dtype)
    )
    return (
        k.join(names, on="name", how="left")
        .with_columns(pl.when(pl.col("_m").is_null()).then(by_dtype).alias("_d"))
        .with_columns(
            pl.coalesce("_m", "_d", "_n", pl.lit("unknown")).alias("precision"),
            pl.when(pl.col("_m").is_not_null())
            .then(pl.lit("kernel_name"))
            .when(pl.col("_d").is_not_null())
            .then(pl.lit("input_dtypes"))
            .when(pl.col("_n").is_not_null())
            .then(pl.lit("kernel_name"))
            .otherwise(pl.lit("none"))
            .alias("rule"),
        )
        .drop("_m", "_d", "_n")
        .sort([*keys, "ts", "device", "stream"], maintain_order=True)  # joins leave rows unordered
    )


def _link_typed_ops(
    ev: pl.LazyFrame, kernels: pl.LazyFrame, typed: pl.LazyFrame, keys: list[str]
) -> pl.LazyFrame:
    """``kernels`` with ``op_name`` and ``input_types`` of the typed CPU op that launched each
    one (see :func:`kernel_precision`; nulls where none is found)."""
    all_ops = typed
    launches = (
        ev.filter(pl.col("kind").is_in(["runtime", "driver"]), pl.col("correlation").is_not_null())
        .select(*keys, "pid", "tid", "ts", "dur", "correlation", pl.col("external_id").alias("_launch_ext"))
        .sort("ts")
    )
    # the innermost-looking CPU op around each launch, for traces whose external ids do not link
    around = (
        launches.join_asof(
            all_ops.select(
                *keys,
                "pid",
                "tid",
                pl.col("ts").alias("_op_ts"),
                (pl.col("ts") + pl.col("dur")).alias("_op_end"),
                pl.col("external_id").alias("_enc_ext"),
            ).sort("_op_ts"),
            left_on="ts",
            right_on="_op_ts",
            by=[*keys, "pid", "tid"],
            strategy="backward",
            check_sortedness=False,
        )
        .filter(pl.col("_op_end") >= pl.col("ts") + pl.col("dur"))
        .select(*keys, "correlation", "_enc_ext")
    )
    launch_ids = (
        launches.select(*keys, "correlation", "_launch_ext")
        .join(around, on=[*keys, "correlation"], how="left")
        .unique(subset=[*keys, "correlation"], keep="first")
        .collect(engine=ENGINE)  # read three times below: computed once
        .lazy()
    )
    # JSON-decode only the ops some kernel can reach (by any of the three links): a few
    # thousand instead of every typed op (MTIA: 108k)
    needed = (
        pl.concat(
            [
                kernels.select(*keys, "external_id"),
                launch_ids.select(*keys, pl.col("_launch_ext").alias("external_id")),
                launch_ids.select(*keys, pl.col("_enc_ext").alias("external_id")),
            ]
        )
        .drop_nulls()
        .unique()
    )
    ops = (
        typed.filter(pl.col("external_id").is_not_null())
        .join(needed, on=[*keys, "external_id"], how="semi", maintain_order="left")
        .select(
            *keys,
            "external_id",
            pl.col("name").alias("op_name"),
            pl.col("args").str.json_path_match("$['Input type']").alias("input_types"),
        )
        .sort(pl.col("input_types").is_null())  # ops that recorded dtypes first
        .unique(subset=[*keys, "external_id"], keep="first", maintain_order=True)
        .collect(engine=ENGINE)  # read three times below: computed once
        .lazy()
    )

    def known(col: str, flag: str) -> pl.LazyFrame:
        return ops.select(*keys, pl.col("external_id").alias(col), pl.lit(True).alias(flag))

    k = (
        kernels.join(launch_ids, on=[*keys, "correlation"], how="left")
        .join(known("external_id", "_kk"), on=[*keys, "external_id"], how="left")
        .join(known("_launch_ext", "_kl"), on=[*keys, "_launch_ext"], how="left")
        .with_columns(
            pl.coalesce(
                pl.when(pl.col("_kk")).then(pl.col("external_id")),
                pl.when(pl.col("_kl")).then(pl.col("_launch_ext")),
                pl.col("_enc_ext"),
            ).alias("_ext")
        )
    )
    k = k.join(ops, left_on=[*keys, "_ext"], right_on=[*keys, "external_id"], how="left").drop(
        "_launch_ext", "_enc_ext", "_kk", "_kl", "_ext"
    )
    return k


def precision_shares(events: Frame, by: Sequence[str] = (), kernels: Frame | None = None) -> pl.LazyFrame:
    """Kernel time per precision (and ``by``): count, time_ns, share, and time decided by each rule.

    Rows are every precision of :data:`PRECISIONS`, then the byte-mover classes of
    :data:`EXCLUDED` (``in_shares`` false), in each group, zero when absent. ``share`` is of the
    group's time in :data:`PRECISIONS` only — communication and memory kernels are in neither
    numerator nor denominator — and null on the excluded rows. ``kernels``:
    :func:`kernel_precision`'s frame where the caller has it.
    """
    by = list(by)
    k = _lazy(kernels) if kernels is not None else kernel_precision(events)
    agg = k.group_by([*by, "precision"]).agg(
        pl.len().alias("count"),
        pl.col("dur").sum().alias("time_ns"),
        pl.col("dur").filter(pl.col("rule") == "input_dtypes").sum().alias("time_by_dtypes_ns"),
        pl.col("dur").filter(pl.col("rule") == "kernel_name").sum().alias("time_by_name_ns"),
    )
    rows = [*PRECISIONS, *EXCLUDED]
    grid = pl.LazyFrame({"precision": rows})
    if by:
        grid = k.select(by).unique().join(grid, how="cross")
    order = pl.col("precision").replace_strict(rows, list(range(len(rows))), return_dtype=pl.Int64)
    inside = pl.col("in_shares")
    total = pl.col("time_ns").filter(inside).sum()
    if by:
        total = total.over(by)
    return (
        grid.join(agg, on=[*by, "precision"], how="left")
        .with_columns(
            pl.col("count").fill_null(0).cast(pl.Int64),
            *[pl.col(c).fill_null(0) for c in ("time_ns", "time_by_dtypes_ns", "time_by_name_ns")],
            pl.col("precision").is_in(list(PRECISIONS)).alias("in_shares"),
        )
        .with_columns(
            pl.when(~inside)
            .then(pl.lit(None, pl.Float64))
            .when(total > 0)
            .then(pl.col("time_ns") / total)
            .otherwise(0.0)
            .alias("share")
        )
        .sort([*by, order])
        .select(
            *by, "precision", "count", "time_ns", "time_by_dtypes_ns", "time_by_name_ns", "share", "in_shares"
        )
    )
