"""Memory over time: the allocator's ``[memory]`` events (``profile_memory=True``) per device.

PyTorch's profiler writes one instant event per allocation and free (cat ``cpu_instant_event``,
name ``[memory]``; an out-of-memory writes ``[OutOfMemory]``) with args ``Bytes`` (negative on a
free), ``Total Allocated`` and ``Total Reserved`` (the device's running totals after the event),
``Addr``, ``Device Type`` (c10's enum: 0 CPU, 1 CUDA …) and ``Device Id``. The importer keeps
them as rows of kind ``instant`` whose ``args`` is the JSON text.

Everything here is read from those totals, never re-summed: the allocated series is ``Total
Allocated`` in event order (time, then Kineto's ``Ev Idx``), its peak the first event holding its
maximum. An event whose totals or device cannot be read as integers is counted as unreadable and
left out (:func:`memory_events`), never guessed.

- :func:`memory_events`: one row per readable event, in order, with ``seq``;
- :func:`device_peaks`: per device the peak and where it happened (the innermost op and
  annotation enclosing it on the allocating thread, the step), reserved peak, OOM count;
- :func:`memory_per_step`: per device and step the level entering it, floor, peak, end, growth;
- :func:`live_at_peak`: the largest allocations the trace saw made and not yet freed at the peak;
- :func:`memory_over_time`: per device at most :data:`BUCKETS` time buckets of the series' max;
- :func:`oom_events`: every ``[OutOfMemory]`` with its op and annotation.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from .args import int_member
from .engine import ENGINE, SCAN_ENGINE
from .steps import in_step

MEMORY_EVENT = "[memory]"
OOM_EVENT = "[OutOfMemory]"
#: c10::DeviceType values as Kineto writes them in ``Device Type``.
DEVICE_TYPES: dict[int, str] = {
    0: "CPU",
    1: "CUDA",
    6: "HIP",
    12: "XPU",
    13: "MPS",
    19: "MTIA",
    20: "PrivateUse1",
}
#: Time buckets of :func:`memory_over_time` per device (at most).
BUCKETS = 120
#: Allocations listed per device by :func:`live_at_peak`.
LIVE_TOP = 10

#: The device a memory row is on.
DEVICE_KEYS = ("node", "rank", "device_type", "device")

_ARGS = {
    "bytes": "Bytes",
    "allocated_bytes": "Total Allocated",
    "reserved_bytes": "Total Reserved",
    "addr": "Addr",
    "device_type_id": "Device Type",
    "device_id": "Device Id",
    "ev_idx": "Ev Idx",
}


#: The args of a ``[memory]`` event as Kineto writes them (and an import spells them): every
#: member an integer, in this order. Such text is read by one regex; any other by key. ASCII
#: digits, as JSON writes them: the regex crate's ``\d`` is Unicode's, a class that slows the
#: pattern's first use in a process (each summary's).
_KINETO_ORDER = (
    "ev_idx",
    "device_type_id",
    "device_id",
    "addr",
    "bytes",
    "allocated_bytes",
    "reserved_bytes",
)
_KINETO_ARGS = r"^\{" + ",".join(rf'"{_ARGS[k]}":(-?[0-9]+)' for k in _KINETO_ORDER) + r"\}$"


def _raw_memory_rows(events: pl.LazyFrame) -> pl.LazyFrame:
    """The memory events' rows with their args members (:data:`_ARGS`) as integer columns, in
    the events' order. Args as Kineto writes them take one regex for all members (7 regexes
    over 560k events cost 1.5 s); the rest (an OOM event, another order) are read by key
    (:func:`profui.analysis.args.int_member`): both read the same integer text."""
    kind_ok = pl.col("kind") == "instant"
    rows = (
        events.filter(kind_ok & pl.col("name").is_in([MEMORY_EVENT, OOM_EVENT]))
        .select("node", "rank", "pid", "tid", "ts", "name", "args")
        .with_row_index("_row")
    )
    read = (
        rows.with_columns(pl.col("args").str.extract_groups(_KINETO_ARGS).alias("_g"))
        .collect(engine=SCAN_ENGINE)
        .lazy()
    )
    plain = pl.col("_g").struct.field("1").is_not_null()
    keep = ("_row", "node", "rank", "pid", "tid", "ts", "name")
    columns = [*keep[1:], *_ARGS]
    fast = read.filter(plain).select(
        *keep, *(pl.col("_g").struct.field(str(i + 1)).cast(pl.Int64, strict=False).alias(k)
                 for i, k in enumerate(_KINETO_ORDER))
    )  # fmt: skip
    if not read.select((~plain).any()).collect(engine=ENGINE).item():
        # every event as Kineto writes it (the usual trace): already in the events' order
        return fast.select(columns)
    by_key = read.filter(~plain).select(*keep, *(int_member(v).alias(k) for k, v in _ARGS.items()))
    return (
        pl.concat([fast.select("_row", *columns), by_key.select("_row", *columns)]).sort("_row").drop("_row")
    )


def _readable() -> pl.Expr:
    return (
        pl.col("allocated_bytes").is_not_null()
        & pl.col("reserved_bytes").is_not_null()
        & pl.col("device_type_id").is_not_null()
        & (pl.col("bytes").is_not_null() | (pl.col("name") == OOM_EVENT))
    )


def memory_rows(events: pl.LazyFrame) -> pl.LazyFrame:
    """Every ``[memory]`` / ``[OutOfMemory]`` event with its args read, readable or not: what
    :func:`memory_events` and :func:`memory_counts` take (``rows=``) so a stage reads them once."""
    return _raw_memory_rows(events)


def memory_events(events: pl.LazyFrame, rows: pl.LazyFrame | None = None) -> pl.LazyFrame:
    """One row per readable ``[memory]`` / ``[OutOfMemory]`` event, sorted per device in event
    order (``seq`` 0, 1, … per device): ``node, rank, device_type`` (``CPU``, ``CUDA`` …),
    ``device`` (``Device Id``; -1 for the CPU), ``seq, ts, pid, tid, event`` (``alloc``, ``free``
    or ``oom``), ``bytes`` (negative on a free), ``allocated_bytes, reserved_bytes`` (the totals
    after it), ``addr``."""
    order = ["node", "rank", "device_type", "device", "ts", "ev_idx"]
    dtype = pl.col("device_type_id")
    names = pl.lit(None, dtype=pl.String)
    for code, name in DEVICE_TYPES.items():
        names = pl.when(dtype == code).then(pl.lit(name)).otherwise(names)
    return (
        (rows if rows is not None else _raw_memory_rows(events))
        .filter(_readable())
        .with_columns(
            pl.coalesce(names, pl.format("type {}", dtype)).alias("device_type"),
            pl.col("device_id").fill_null(-1).clip(-(2**31), 2**31 - 1).cast(pl.Int32).alias("device"),
            pl.when(pl.col("name") == OOM_EVENT)
            .then(pl.lit("oom"))
            .when(pl.col("bytes") < 0)
            .then(pl.lit("free"))
            .otherwise(pl.lit("alloc"))
            .alias("event"),
        )
        .sort(order, nulls_last=True, maintain_order=True)
        .with_columns(pl.int_range(pl.len(), dtype=pl.Int64).over(DEVICE_KEYS).alias("seq"))
        .select(
            *DEVICE_KEYS,
            "seq",
            "ts",
            "pid",
            "tid",
            "event",
            "bytes",
            "allocated_bytes",
            "reserved_bytes",
            "addr",
        )
    )


def _require_event_order(mem: pl.DataFrame) -> None:
    """Raise ``ValueError`` unless ``mem`` is in :func:`memory_events`' row order: each device's
    rows together, ``seq`` 0, 1, … (so time order), which the callers read without sorting."""
    first = pl.int_range(pl.len()) == 0
    same = pl.all_horizontal(*(pl.col(k).eq_missing(pl.col(k).shift(1)) for k in DEVICE_KEYS))
    ok = (
        pl.when(first | ~same).then(pl.col("seq") == 0).otherwise(pl.col("seq") == pl.col("seq").shift(1) + 1)
    )
    if not mem.select(ok.all()).item():
        raise ValueError("memory rows are not in memory_events' order (per device, seq 0, 1, ...)")


def _applied() -> pl.Expr:
    """The bytes an event added to the total: its ``Bytes``, none for an out-of-memory (its
    request failed)."""
    return pl.when(pl.col("event") == "oom").then(0).otherwise(pl.col("bytes").fill_null(0))


#: Why a trace has no ``[memory]`` events, by the manifest's ``source``: only the PyTorch
#: profiler records the allocator's events; the Nsight and JAX imports never bring any.
_NO_MEMORY_WHY = {
    "profcap": "recorded without --memory (profcap --memory records them)",
    "kineto-import": "the PyTorch profiler ran without profile_memory=True",
    "nsys-import": "an Nsight Systems export brings none (profui reads the allocator's events from "
    "PyTorch profiler traces recorded with profile_memory=True)",
    "jax-import": "a JAX trace brings none (profui reads the allocator's events from PyTorch "
    "profiler traces recorded with profile_memory=True)",
}


def no_memory_note(source: str | None) -> str:
    """The note for a trace without ``[memory]`` events, worded for its ``source`` (the
    manifest's: ``profcap``, ``kineto-import``, ``nsys-import``, ``jax-import``, ...)."""
    why = _NO_MEMORY_WHY.get(
        source or "", "they come from the PyTorch profiler with profile_memory=True (profcap --memory)"
    )
    return f"no memory events ([memory]): {why}"


def memory_counts(
    events: pl.LazyFrame, rows: pl.LazyFrame | None = None, source: str | None = None
) -> dict[str, Any]:
    """``{"events": n, "unreadable": n, "devices": n, "note": ...}``: how many ``[memory]`` /
    ``[OutOfMemory]`` events the trace holds, how many could not be read, and a plain note when
    there are none (:func:`no_memory_note` for the trace's ``source``)."""
    c = (
        (rows if rows is not None else _raw_memory_rows(events))
        .select(
            pl.len().alias("events"),
            (~_readable()).sum().alias("unreadable"),
            pl.struct("node", "rank", "device_type_id", "device_id")
            .filter(_readable())
            .n_unique()
            .alias("devices"),
        )
        .collect(engine=ENGINE)
        .row(0, named=True)
    )
    n, bad, devices = int(c["events"]), int(c["unreadable"] or 0), int(c["devices"] or 0)
    return counts_of(n, bad, devices, source)


def counts_of(n: int, bad: int, devices: int, source: str | None) -> dict[str, Any]:
    """:func:`memory_counts`' answer from its numbers (a job's: its ranks' summed)."""
    if n == 0:
        note = no_memory_note(source)
    elif bad:
        note = f"{bad} of {n} memory events could not be read (a total or the device is not an integer) and are left out"
    else:
        note = ""
    return {"events": n, "unreadable": bad, "devices": devices if n - bad else 0, "note": note}


def enclosing(rows: pl.DataFrame, events: pl.LazyFrame, kind: str, out: str) -> pl.DataFrame:
    """``rows`` (with ``node, rank, pid, tid, ts``) with column ``out``: the name of the innermost
    event of ``kind`` (``cpu_op``, ``annotation``) on the same thread whose span holds ``ts``
    (null when none)."""
    if rows.is_empty():
        return rows.with_columns(pl.lit(None, dtype=pl.String).alias(out))
    keys = ["node", "rank", "pid", "tid"]
    tagged = rows.with_row_index("_row")
    spans = events.filter(pl.col("kind") == kind).select(
        *keys,
        pl.col("ts").alias("_t0"),
        (pl.col("ts") + pl.col("dur")).alias("_t1"),
        pl.col("name").alias(out),
    )
    # the few spans that hold some row's instant (on any thread: the join below matches the
    # thread), found by one filter per 32 instants: a join on the thread would pair each row
    # with every span of its thread
    holding = []
    wanted = tagged.drop_nulls([*keys, "ts"]).get_column("ts").unique().sort().to_list()
    for i in range(0, len(wanted), 32):
        cond = pl.lit(False)
        for ts in wanted[i : i + 32]:
            cond = cond | ((pl.col("_t0") <= ts) & (pl.col("_t1") >= ts))
        holding.append(spans.filter(cond).collect(engine=ENGINE))
    if not holding:
        return rows.with_columns(pl.lit(None, dtype=pl.String).alias(out))
    inside = (
        tagged.lazy()
        .select("_row", *keys, "ts")
        .join(pl.concat(holding).lazy(), on=keys, how="inner")
        .filter((pl.col("_t0") <= pl.col("ts")) & (pl.col("ts") <= pl.col("_t1")))
        .sort("_row", "_t0", "_t1", descending=[False, True, False])
        .group_by("_row", maintain_order=True)
        .agg(pl.col(out).first())
        .collect(engine=ENGINE)
    )
    return tagged.join(inside, on="_row", how="left").drop("_row")


def _step_of(rows: pl.DataFrame, windows: pl.DataFrame) -> pl.DataFrame:
    """``rows`` with ``step``: the step whose host window holds ``ts`` (null outside steps)."""
    if windows.is_empty() or rows.is_empty():
        return rows.with_columns(pl.lit(None, dtype=pl.Int64).alias("step"))
    tagged = rows.with_row_index("_row")
    return in_step(tagged, windows, keep_outside=True).sort("_row").drop("_row").collect(engine=ENGINE)


def device_peaks(mem: pl.DataFrame, events: pl.LazyFrame, windows: pl.DataFrame) -> pl.DataFrame:
    """Per device of ``mem`` (:func:`memory_events`' frame, in its order): event counts, first
    and last event, the allocated level before the first and after the last, the peak
    (``peak_allocated_bytes`` at ``peak_ns``, its first event) with the allocating thread's
    innermost op and annotation and the step it falls in, the reserved peak, and the
    out-of-memory count.

    ``mem`` must keep :func:`memory_events`' row order (each device's rows in ``seq`` order);
    ``ValueError`` otherwise."""
    _require_event_order(mem)
    before_first = pl.col("allocated_bytes").first() - _applied().first()
    at_peak = pl.col("allocated_bytes").arg_max()
    per = (
        mem.lazy()  # in device and event order (memory_events'): not sorted again
        .group_by(DEVICE_KEYS, maintain_order=True)
        .agg(
            pl.len().cast(pl.Int64).alias("events"),
            (pl.col("event") == "alloc").sum().cast(pl.Int64).alias("allocs"),
            (pl.col("event") == "free").sum().cast(pl.Int64).alias("frees"),
            (pl.col("event") == "oom").sum().cast(pl.Int64).alias("oom_events"),
            pl.col("ts").min().alias("first_ns"),
            pl.col("ts").max().alias("last_ns"),
            before_first.alias("start_allocated_bytes"),
            pl.col("allocated_bytes").last().alias("end_allocated_bytes"),
            pl.col("allocated_bytes").min().alias("min_allocated_bytes"),
            pl.col("allocated_bytes").max().alias("peak_allocated_bytes"),
            pl.col("ts").get(at_peak).alias("ts"),
            pl.col("seq").get(at_peak).alias("peak_seq"),
            pl.col("pid").get(at_peak).alias("pid"),
            pl.col("tid").get(at_peak).alias("peak_tid"),
            pl.col("reserved_bytes").max().alias("peak_reserved_bytes"),
            pl.col("ts").get(pl.col("reserved_bytes").arg_max()).alias("peak_reserved_ns"),
        )
        .with_columns(pl.col("peak_tid").alias("tid"))
        .collect(engine=ENGINE)
    )
    per = enclosing(per, events, "cpu_op", "peak_op")
    per = enclosing(per, events, "annotation", "peak_annotation")
    per = _step_of(per, windows).rename({"ts": "peak_ns", "step": "peak_step"}).drop("pid", "tid")
    return per.sort(*DEVICE_KEYS)


def memory_per_step(mem: pl.DataFrame, windows: pl.DataFrame) -> pl.DataFrame:
    """Per device and step (the step's host window): the allocated level entering it (the last
    event before it; before the device's first event, the level that event started from), its
    floor (the least level inside, entering level included), peak, the level at its end and the
    growth (end − entering). A leak shows as a floor rising step after step.

    ``mem`` must keep :func:`memory_events`' row order (each device's rows in ``seq`` order,
    so in time order); ``ValueError`` otherwise."""
    _require_event_order(mem)
    cols = [*DEVICE_KEYS, "step", "start_ns", "end_ns", "events", "start_allocated_bytes",
            "min_allocated_bytes", "peak_allocated_bytes", "end_allocated_bytes", "growth_bytes"]  # fmt: skip
    m = mem.lazy()
    w = windows.lazy().select(
        "node", "rank", "step", pl.col("cpu_start_ns").alias("start_ns"), pl.col("cpu_end_ns").alias("end_ns")
    )
    grid = m.select(*DEVICE_KEYS).unique().join(w, on=["node", "rank"], how="inner")
    # each device's rows are in event order (memory_events'), so in time order: what the as-of
    # join below needs of them, without sorting them again
    level = m.select(*DEVICE_KEYS, "ts", "seq", "allocated_bytes")
    first = m.filter(pl.col("seq") == 0).select(
        *DEVICE_KEYS, (pl.col("allocated_bytes") - _applied()).alias("_before")
    )
    entering = (
        grid.sort("start_ns")
        .join_asof(
            level.rename({"ts": "_ts"}),
            left_on="start_ns",
            right_on="_ts",
            by=list(DEVICE_KEYS),
            strategy="backward",
            allow_exact_matches=False,
            check_sortedness=False,
        )
        .join(first, on=list(DEVICE_KEYS), how="left")
        .with_columns(pl.coalesce("allocated_bytes", "_before").alias("start_allocated_bytes"))
        .select(*DEVICE_KEYS, "step", "start_ns", "end_ns", "start_allocated_bytes")
    )
    inside = (
        in_step(m.select(*DEVICE_KEYS, "ts", "seq", "allocated_bytes"), windows)
        .group_by(*DEVICE_KEYS, "step")
        .agg(
            pl.len().cast(pl.Int64).alias("events"),
            pl.col("allocated_bytes").min().alias("_min"),
            pl.col("allocated_bytes").max().alias("_max"),
            pl.col("allocated_bytes").get(pl.col("seq").arg_max()).alias("_last"),
        )
    )
    s = pl.col("start_allocated_bytes")
    return (
        entering.join(inside, on=[*DEVICE_KEYS, "step"], how="left")
        .with_columns(
            pl.col("events").fill_null(0),
            pl.min_horizontal(s, pl.col("_min")).alias("min_allocated_bytes"),
            pl.max_horizontal(s, pl.col("_max")).alias("peak_allocated_bytes"),
            pl.coalesce("_last", s).alias("end_allocated_bytes"),
        )
        .with_columns((pl.col("end_allocated_bytes") - s).alias("growth_bytes"))
        .select(cols)
        .sort(*DEVICE_KEYS, "step")
        .collect(engine=ENGINE)
    )


def live_at_peak(
    mem: pl.DataFrame, peaks: pl.DataFrame, events: pl.LazyFrame, top: int = LIVE_TOP
) -> pl.DataFrame:
    """Per device the ``top`` largest allocations made in the trace and not freed by its peak
    (the next event on their address comes after the peak, or never): ``addr, bytes, alloc_ns,
    tid``, the op allocating them, their ``peak_share`` (of the peak allocated level) and their
    ``order`` (1 = largest). Memory allocated before the trace began is not among them."""
    p = peaks.lazy().select(*DEVICE_KEYS, "peak_seq", "peak_allocated_bytes")
    live = (
        mem.lazy()
        .filter(pl.col("event") != "oom")
        .join(p, on=list(DEVICE_KEYS), how="inner")
        .filter(pl.col("seq") <= pl.col("peak_seq"))
        # an allocation whose address's next event comes after the peak (or never) is the last
        # event on its address up to the peak: found per address among the events before the
        # peak, not by pairing every event with its address's next
        .group_by(*DEVICE_KEYS, "addr")
        .agg(pl.all().get(pl.col("seq").arg_max()))
        .filter(pl.col("event") == "alloc")
        .sort([*DEVICE_KEYS, "bytes", "seq"], descending=[False, False, False, False, True, False])
        .with_columns(pl.int_range(1, pl.len() + 1, dtype=pl.Int64).over(DEVICE_KEYS).alias("order"))
        .filter(pl.col("order") <= top)
        .with_columns((pl.col("bytes") / pl.col("peak_allocated_bytes")).alias("peak_share"))
        .collect(engine=ENGINE)
    )
    live = enclosing(live, events, "cpu_op", "op")
    return live.select(
        *DEVICE_KEYS, "order", "addr", "bytes", pl.col("ts").alias("alloc_ns"), "tid", "op", "peak_share"
    )


def memory_over_time(mem: pl.DataFrame, buckets: int = BUCKETS) -> pl.DataFrame:
    """Per device the series in at most ``buckets`` equal time buckets from its first event to
    its last: each non-empty bucket's highest allocated and reserved levels and the allocated
    level it ends at.

    ``mem`` must keep :func:`memory_events`' row order (each device's rows in ``seq`` order);
    ``ValueError`` otherwise."""
    _require_event_order(mem)
    keys = list(DEVICE_KEYS)
    span = (pl.col("ts").max() - pl.col("ts").min()).over(keys) + 1
    length = (span + buckets - 1) // buckets
    return (
        mem.lazy()  # in device and event order (memory_events'): a bucket's last row is its last event
        .with_columns(pl.col("ts").min().over(keys).alias("_t0"), length.alias("bucket_len_ns"))
        .with_columns(((pl.col("ts") - pl.col("_t0")) // pl.col("bucket_len_ns")).alias("bucket"))
        .group_by(*keys, "bucket", maintain_order=True)
        .agg(
            (pl.col("_t0").first() + pl.col("bucket").first() * pl.col("bucket_len_ns").first()).alias(
                "bucket_start_ns"
            ),
            pl.col("bucket_len_ns").first(),
            pl.col("allocated_bytes").max().alias("max_allocated_bytes"),
            pl.col("reserved_bytes").max().alias("max_reserved_bytes"),
            pl.col("allocated_bytes").last().alias("end_allocated_bytes"),
        )
        .sort(*keys, "bucket")
        .collect(engine=ENGINE)
    )


def oom_events(mem: pl.DataFrame, events: pl.LazyFrame) -> pl.DataFrame:
    """Every out-of-memory event: where, when, the bytes asked for, the totals, the op and the
    annotation enclosing it on its thread."""
    rows = mem.filter(pl.col("event") == "oom")
    rows = enclosing(rows, events, "cpu_op", "op")
    rows = enclosing(rows, events, "annotation", "annotation")
    return rows.select(
        *DEVICE_KEYS,
        pl.col("ts").alias("ts_ns"),
        "tid",
        "bytes",
        "allocated_bytes",
        "reserved_bytes",
        "op",
        "annotation",
    )
