"""Interval mathematics over Polars frames: union, gaps, overlap, exclusive label coverage, buckets.

Intervals are half-open ``[start, end)`` in integer ns, in columns ``start`` and ``end``. Every
function works per group (``by`` columns, possibly none) and is vectorised: sorts, cumulative
maxima and sums, no Python loop over intervals. Zero-length intervals cover nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

Frame = pl.LazyFrame | pl.DataFrame


def _lazy(df: Frame) -> pl.LazyFrame:
    return df.lazy() if isinstance(df, pl.DataFrame) else df


def _over(expr: pl.Expr, by: Sequence[str]) -> pl.Expr:
    return expr.over(list(by)) if by else expr


def as_intervals(events: Frame, by: Sequence[str] = ()) -> pl.LazyFrame:
    """``start = ts``, ``end = ts + dur`` plus the ``by`` columns, from an events frame."""
    return _lazy(events).select(*by, pl.col("ts").alias("start"), (pl.col("ts") + pl.col("dur")).alias("end"))


def sorted_runs(
    lf: pl.LazyFrame, by: Sequence[str], order: Sequence[str], descending: Sequence[bool] | None = None
) -> pl.LazyFrame:
    """``lf`` sorted by its ``by`` group, then ``order`` (``descending`` per ``order`` column),
    with ``_seg`` numbering each group's run of rows.

    Window expressions over the sorted rows then go ``.over("_seg")``: one integer key instead
    of the (often string) group columns, and no ``order_by`` sort inside the window.
    """
    key = pl.struct(list(by))
    desc = [False, *(descending or [False] * len(order))]
    return lf.sort(key, *order, descending=desc).with_columns(_seg=key.rle_id())


def merge_intervals(intervals: Frame, by: Sequence[str] = ()) -> pl.LazyFrame:
    """Union of the intervals of each group as disjoint ``[start, end)`` intervals, sorted by
    group, then start.

    Overlapping and touching intervals merge; zero-length ones are dropped.
    """
    by = list(by)
    lf = _lazy(intervals).select(*by, "start", "end").filter(pl.col("end") > pl.col("start"))
    # A merged interval starts where ``start`` passes every earlier end of its group (``_new``);
    # it ends at the running maximum of the ends on its last row (``_last``), and its start is
    # carried down from its first row. The rows are sorted by group, then ``start``: the running
    # maximum then is the one window (over the group's run, an integer), and the rest compares
    # each row with its neighbours, a group's first row always starting a merged interval.
    if by:
        lf = sorted_runs(lf, by, ["start"])
        first = pl.col("_seg").ne_missing(pl.col("_seg").shift(1))
        cum_max = pl.col("end").cum_max().over("_seg")
    else:
        lf = lf.sort("start")
        first = pl.col("_cm").shift(1).is_null()
        cum_max = pl.col("end").cum_max()
    return (
        lf.with_columns(_cm=cum_max)
        .with_columns(_new=first | (pl.col("start") > pl.col("_cm").shift(1)))
        .with_columns(_gs=pl.when("_new").then("start").forward_fill(), _last=pl.col("_new").shift(-1))
        .filter(pl.col("_last").fill_null(True))
        .select(*by, pl.col("_gs").alias("start"), pl.col("_cm").alias("end"))
    )


def clip_to_windows(intervals: Frame, windows: Frame, by: Sequence[str]) -> pl.LazyFrame:
    """``intervals`` (``by`` keys, ``start``, ``end`` and any other columns) cut to each window of
    ``windows`` (``by``, ``step``, ``w_start``, ``w_end``) they meet, with that window's ``step``:
    one row per interval and window with ``start < w_end`` and ``end > w_start``.

    Never a row per interval and window of its key: two as-of joins find, per interval, the
    range of windows (in start order) that can meet it — from the first whose running maximum
    end passes its start to the last starting before its end — so only that range is tried,
    and a window nested in a longer one is still found.
    """
    by = list(by)
    w = (
        _lazy(windows)
        .select(*by, "step", "w_start", "w_end")
        .sort(*by, "w_start", "w_end", "step")
        .with_columns(
            pl.int_range(pl.len(), dtype=pl.Int64).over(by).alias("_w"),
            pl.col("w_end").cum_max().over(by).alias("_reach"),
        )
    )
    # numbered once: read three times below, an unsorted plan (a join's output) could be
    # evaluated in another row order each time, and the numbers would pair wrong rows
    iv = _lazy(intervals).collect().lazy().with_row_index("_iv")
    first = iv.select("_iv", *by, "start").sort("start").join_asof(
        w.select(*by, "_reach", pl.col("_w").alias("_first")).sort("_reach"),
        left_on="start", right_on="_reach", by=by, strategy="forward",
        allow_exact_matches=False, check_sortedness=False,
    )  # fmt: skip
    last = iv.select("_iv", *by, "end").sort("end").join_asof(
        w.select(*by, "w_start", pl.col("_w").alias("_last")).sort("w_start"),
        left_on="end", right_on="w_start", by=by, strategy="backward",
        allow_exact_matches=False, check_sortedness=False,
    )  # fmt: skip
    ranges = (
        first.select("_iv", "_first")
        .join(last.select("_iv", "_last"), on="_iv", how="inner")
        .filter(pl.col("_first") <= pl.col("_last"))
        .select("_iv", pl.int_ranges("_first", pl.col("_last") + 1).alias("_w"))
        .explode("_w")
    )
    return (
        iv.join(ranges, on="_iv", how="inner")
        .join(w.select(*by, "_w", "step", "w_start", "w_end"), on=[*by, "_w"], how="inner")
        .filter((pl.col("start") < pl.col("w_end")) & (pl.col("end") > pl.col("w_start")))
        .sort("_iv", "_w")
        .with_columns(
            pl.max_horizontal("start", "w_start").alias("start"),
            pl.min_horizontal("end", "w_end").alias("end"),
        )
        .drop("_iv", "_w", "w_start", "w_end")
    )


def union_length(
    intervals: Frame, by: Sequence[str] = (), name: str = "busy_ns", merged: bool = False
) -> pl.LazyFrame:
    """Total length covered by the union of each group's intervals (one row per group).

    Pass ``merged=True`` when the intervals are already disjoint per group.
    """
    by = list(by)
    union = _lazy(intervals).select(*by, "start", "end") if merged else merge_intervals(intervals, by)
    agg = (pl.col("end") - pl.col("start")).sum().alias(name)
    if not by:
        return union.select(agg.fill_null(0))
    groups = _lazy(intervals).select(by).unique()  # groups with only empty intervals get 0
    return (
        groups.join(union.group_by(by).agg(agg), on=by, how="left", nulls_equal=True)
        .with_columns(pl.col(name).fill_null(0))
        .sort(by)
    )


def gaps(intervals: Frame, by: Sequence[str] = ()) -> pl.LazyFrame:
    """The holes between consecutive merged intervals of each group (``start``, ``end``)."""
    by = list(by)
    merged = merge_intervals(intervals, by)
    return (
        merged.with_columns(_next=_over(pl.col("start").shift(-1), by))
        .filter(pl.col("_next").is_not_null())
        .select(*by, pl.col("end").alias("start"), pl.col("_next").alias("end"))
    )


def overlap_length(a: Frame, b: Frame, by: Sequence[str] = (), name: str = "overlap_ns") -> pl.LazyFrame:
    """Length of ``union(a) ∩ union(b)`` per group: ``|A| + |B| − |A ∪ B|``."""
    by = list(by)
    a_cols = _lazy(a).select(*by, "start", "end")
    b_cols = _lazy(b).select(*by, "start", "end")
    la = union_length(a_cols, by, "_a")
    lb = union_length(b_cols, by, "_b")
    lab = union_length(pl.concat([a_cols, b_cols]), by, "_ab")
    value = (pl.col("_a").fill_null(0) + pl.col("_b").fill_null(0) - pl.col("_ab")).alias(name)
    if not by:
        return pl.concat([la, lb, lab], how="horizontal").select(value)
    out = lab.join(la, on=by, how="left", nulls_equal=True).join(lb, on=by, how="left", nulls_equal=True)
    return out.select(*by, value).sort(by)


def label_coverage(
    intervals: Frame, label: str, labels: Sequence[str], by: Sequence[str] = ()
) -> pl.LazyFrame:
    """Exclusive wall time per combination of labels active at once (a sweep line).

    ``intervals`` has a ``label`` column whose values are among ``labels``. Returns per group
    one row per non-empty combination: ``mask`` (bit ``i`` set when ``labels[i]`` is active),
    ``labels`` (list of the active labels in ``labels`` order) and ``time_ns``. The rows of a
    group sum to the union length of its intervals.
    """
    by = list(by)
    labels = list(labels)
    lf = _lazy(intervals).select(*by, label, "start", "end").filter(pl.col("end") > pl.col("start"))
    idx = pl.col(label).replace_strict(labels, list(range(len(labels))), return_dtype=pl.Int64)
    lf = lf.with_columns(_i=idx)
    points = pl.concat(
        [
            lf.select(*by, pl.col("start").alias("t"), "_i", pl.lit(1, pl.Int64).alias("_d")),
            lf.select(*by, pl.col("end").alias("t"), "_i", pl.lit(-1, pl.Int64).alias("_d")),
        ]
    )
    # the points sorted by group, then time: a group's points sum to zero (each interval opens
    # and closes in it), so the running counts over all rows are the group's own, and a group's
    # last point (nothing open) opens no segment, whatever follows it. The order of points at
    # the same instant does not matter: only the last one's counts open a segment of length > 0
    counts = [
        pl.when(pl.col("_i") == i).then(pl.col("_d")).otherwise(0).cum_sum().alias(f"_c{i}")
        for i in range(len(labels))
    ]
    mask = pl.sum_horizontal(
        [pl.when(pl.col(f"_c{i}") > 0).then(1 << i).otherwise(0) for i in range(len(labels))]
    ).alias("mask")
    ordered = points.sort(pl.struct(by), "t") if by else points.sort("t")
    seg = (
        ordered.with_columns(counts)
        .with_columns(mask, (pl.col("t").shift(-1) - pl.col("t")).alias("_len"))
        .filter(pl.col("mask") > 0, pl.col("_len") > 0)
        .group_by([*by, "mask"])
        .agg(pl.col("_len").sum().alias("time_ns"))
    )
    names = pl.concat_list(
        [
            pl.when((pl.col("mask") & (1 << i)) > 0).then(pl.lit(n)).otherwise(None)
            for i, n in enumerate(labels)
        ]
    ).list.drop_nulls()
    return (
        seg.with_columns(names.alias("labels")).select(*by, "mask", "labels", "time_ns").sort([*by, "mask"])
    )


def bucket_coverage(
    intervals: Frame, bucket_ns: int, origin: int, by: Sequence[str] = (), merged: bool = False
) -> pl.LazyFrame:
    """Covered ns of each time bucket ``[origin + k·bucket_ns, origin + (k+1)·bucket_ns)``.

    Returns ``by``, ``bucket`` (k), ``covered_ns`` for buckets touched by the union; untouched
    buckets are absent (join with :func:`bucket_grid` for zeros). Pass ``merged=True`` when
    the intervals are already disjoint per group.
    """
    if bucket_ns <= 0:
        raise ValueError("bucket_ns must be positive")
    by = list(by)
    m = _lazy(intervals).select(*by, "start", "end") if merged else merge_intervals(intervals, by)
    b = int(bucket_ns)
    first = (pl.col("start") - origin) // b
    last = (pl.col("end") - 1 - origin) // b
    bstart = pl.col("bucket") * b + origin
    return (
        m.filter(pl.col("end") > pl.col("start"))
        .with_columns(pl.int_ranges(first, last + 1).alias("bucket"))
        .explode("bucket")
        .with_columns(
            (pl.min_horizontal(pl.col("end"), bstart + b) - pl.max_horizontal(pl.col("start"), bstart)).alias(
                "covered_ns"
            )
        )
        .group_by([*by, "bucket"])
        .agg(pl.col("covered_ns").sum())
        .sort([*by, "bucket"])
    )


def bucket_grid(origin: int, end: int, bucket_ns: int) -> pl.LazyFrame:
    """Every bucket index covering ``[origin, end)`` with its ``bucket_start`` and clipped ``bucket_len``."""
    n = max(1, -(-(end - origin) // bucket_ns))
    k = pl.int_range(0, n, dtype=pl.Int64, eager=False)
    return (
        pl.LazyFrame()
        .select(k.alias("bucket"))
        .with_columns(
            (pl.col("bucket") * bucket_ns + origin).alias("bucket_start"),
        )
        .with_columns(
            (
                pl.min_horizontal(pl.col("bucket_start") + bucket_ns, pl.lit(end)) - pl.col("bucket_start")
            ).alias("bucket_len")
        )
    )


def nice_bucket_ns(span_ns: int, target_buckets: int = 200) -> int:
    """A round bucket size (1, 2 or 5 × 10^k ns) giving about ``target_buckets`` over ``span_ns``."""
    if span_ns <= 0:
        return 1
    raw = max(1, span_ns // max(1, target_buckets))
    mag = 1
    while mag * 10 <= raw:
        mag *= 10
    for step in (1, 2, 5, 10):
        if mag * step >= raw:
            return mag * step
    return mag * 10
