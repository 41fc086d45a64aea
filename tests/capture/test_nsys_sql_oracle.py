"""The Nsight converter's SQL layer and linking against the previous, row-by-row converter (kept as
the oracle in ``nsys_rowwise.py``): small exports built cell by cell (integers, int64's ends,
reals, text, BLOBs, NULLs), some columns dropped, some tables ``WITHOUT ROWID`` or with a user
column named ``rowid``, must convert to the same events files, or fail with the same error.

What this reaches that the column tests do not: the typing of each cell, the reasons and lost
counts, a sync row's device through its CUDA context, the stream range, the shared-memory sum,
and ``_link``'s filter (a call with no enclosing op range, a NULL correlation)."""

from __future__ import annotations

import sqlite3
import sys
import tempfile
from pathlib import Path

import pyarrow.parquet as pq
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from profui.capture.nsys.convert import convert_nsys_file

sys.path.insert(0, str(Path(__file__).resolve().parent))
import nsys_rowwise  # noqa: E402

I64 = (-(2**63), 2**63 - 1)
#: A cell that no column of a sound export holds.
ODD = st.sampled_from([*I64, 1.5, -0.5, 2.0, 9e300, "x", "c", "", "7", b"c", b"\xff\x61", b"", None])

STRING_IDS = {
    1: "cudaLaunchKernel_v7000",
    2: "cuLaunchKernel",
    3: "ampere_sgemm",
    4: "",
    5: "cudaStreamSynchronize_v3020",
    6: "dom",
}
NVTX_TEXTS = [
    "aten::mm, seq = 3, op_id = 7",
    "aten::add, op_id = 8, sizes = [[2], [2]]",
    "ProfilerStep#1",
    "user range",
    'quote " and \\',
    "",
    None,
]

_TIME = st.integers(0, 40)
_PID = st.sampled_from([1 << 24, 2 << 24])


def _cell(good: st.SearchStrategy) -> st.SearchStrategy:
    """Mostly a value a sound export holds, sometimes an odd one."""
    return st.one_of(good, good, good, good, ODD)


def _copied(good: st.SearchStrategy) -> st.SearchStrategy:
    """A cell the trace copies into an integer column: rarely one it cannot hold (which fails
    the whole conversion, so that often it would hide every other difference)."""
    return st.one_of(*[good] * 9, st.sampled_from([*I64, None, 1.5]))


#: table -> its columns (as Nsight declares them) and what each cell may hold.
COMMON = {
    "start": _cell(_TIME),
    "end": _cell(_TIME),
    "deviceId": _cell(st.integers(0, 2)),
    # a context as text in one table and as a BLOB in another is one context (ae71989 read BLOBs as text)
    "contextId": _cell(st.sampled_from([1, 2, 2.0, "c", b"c"])),
    "streamId": _cell(st.sampled_from([7, 13, 0xFFFFFFFF])),
    "correlationId": _copied(st.integers(1, 6)),
    "globalPid": _cell(_PID),
}
TABLES = {
    "CUPTI_ACTIVITY_KIND_KERNEL": {
        **COMMON,
        "demangledName": _cell(st.integers(1, 7)),
        "shortName": _cell(st.integers(1, 7)),
        **{f"{p}{a}": _cell(st.integers(1, 4)) for p in ("grid", "block") for a in "XYZ"},
        "registersPerThread": _cell(st.integers(0, 64)),
        # sums beyond int64 on either side are written exactly
        "staticSharedMemory": _cell(st.sampled_from([0, 4096, *I64])),
        "dynamicSharedMemory": _cell(st.sampled_from([0, 5, -5, *I64])),
    },
    "CUPTI_ACTIVITY_KIND_MEMCPY": {
        **COMMON,
        "bytes": _copied(st.integers(0, 1 << 20)),
        "copyKind": _cell(st.integers(0, 10)),
        "srcKind": _cell(st.integers(0, 6)),
        "dstKind": _cell(st.integers(0, 6)),
    },
    "CUPTI_ACTIVITY_KIND_MEMSET": {
        **COMMON,
        "bytes": _copied(st.integers(0, 99)),
        "memKind": _cell(st.integers(0, 6)),
    },
    "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION": {**COMMON, "syncType": _cell(st.integers(0, 4))},
    "CUPTI_ACTIVITY_KIND_RUNTIME": {
        "start": _cell(_TIME),
        "end": _cell(_TIME),
        "globalTid": _cell(st.sampled_from([(1 << 24) | 5, (1 << 24) | 6, (2 << 24) | 5])),
        "correlationId": _copied(st.integers(1, 6)),
        "nameId": _cell(st.integers(1, 7)),
        "returnValue": _cell(st.integers(0, 2)),
    },
    "NVTX_EVENTS": {
        "start": _cell(_TIME),
        "end": _cell(_TIME),
        "eventType": _cell(st.sampled_from([59, 60, 34, 75])),
        "text": _cell(st.sampled_from(NVTX_TEXTS)),
        "textId": _cell(st.integers(1, 7)),
        "globalTid": _cell(st.sampled_from([(1 << 24) | 5, (1 << 24) | 6, (2 << 24) | 5])),
        "domainId": _cell(st.integers(0, 2)),
    },
}
TEXT_COLUMNS = {"text", "value", "name"}


@st.composite
def exports(draw: st.DrawFn) -> dict[str, tuple[list[str], list[tuple], str]]:
    """Per table: its columns, rows and layout (``rowid`` table, ``WITHOUT ROWID``, or with a
    user column named ``rowid``)."""
    out = {}
    for table, columns in TABLES.items():
        if draw(st.integers(0, 5)) == 0:
            continue  # the export lacks the table
        # a column dropped now and then; never all of them: ae71989 read such a table with the
        # SQL "SELECT  FROM t" and called the export corrupt (the new reader reads its rows)
        names = [c for c in columns if draw(st.integers(0, 11)) != 0] or [next(iter(columns))]
        rows = draw(st.lists(st.tuples(*(columns[c] for c in names)), max_size=8))
        out[table] = (names, rows, draw(st.sampled_from(["rowid", "rowid", "without rowid", "user rowid"])))
    return out


def _write(path: Path, tables: dict[str, tuple[list[str], list[tuple], str]]) -> None:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE StringIds (id INTEGER, value TEXT)")
    conn.executemany("INSERT INTO StringIds VALUES (?, ?)", STRING_IDS.items())
    conn.execute("CREATE TABLE PROCESSES (globalPid INTEGER, name TEXT)")
    conn.executemany("INSERT INTO PROCESSES VALUES (?, ?)", [(1 << 24, "one"), (2 << 24, b"tw\xffo")])
    conn.execute("CREATE TABLE ThreadNames (globalTid INTEGER, nameId INTEGER)")
    conn.executemany("INSERT INTO ThreadNames VALUES (?, ?)", [((1 << 24) | 5, 6), ((2 << 24) | 5, 3)])
    for table, (names, rows, layout) in tables.items():
        cols = [f'"{c}" {"TEXT" if c in TEXT_COLUMNS else "INTEGER"}' for c in names]
        if layout == "without rowid":
            conn.execute(
                f'CREATE TABLE "{table}" ({", ".join([*cols, "k INTEGER PRIMARY KEY"])}) WITHOUT ROWID'
            )
            rows = [(*r, i) for i, r in enumerate(rows)]
        elif layout == "user rowid":
            conn.execute(f'CREATE TABLE "{table}" ({", ".join([*cols, "rowid INTEGER"])})')
            rows = [(*r, -i) for i, r in enumerate(rows)]
        else:
            conn.execute(f'CREATE TABLE "{table}" ({", ".join(cols)})')
        if rows and rows[0]:
            marks = ", ".join("?" * len(rows[0]))
            conn.executemany(f'INSERT INTO "{table}" VALUES ({marks})', rows)
    conn.commit()
    conn.close()


def _outcome(convert, src: Path, out: Path) -> object:
    """What a converter wrote (each file's rows and metadata) and returned, or the error it raised."""
    try:
        results = convert(src, out, node="n")
    except Exception as exc:  # the same failure, of the same type, is the same outcome
        message = str(exc)
        if "a value no trace can hold (" in message:
            # of several such values the old converter named the first of the first rank it
            # wrote, the new one the first of the first table it reads: the refusal is the same
            message = message.split(" (")[0]
        return (type(exc).__name__, message)
    files = {}
    for p in sorted(out.rglob("*.parquet")):
        t = pq.read_table(p)
        files[str(p.relative_to(out))] = (t.to_pylist(), t.schema.metadata)
    # what the manifest is made of: counts, devices, GPUs, the source's notes, skips and names
    found = [{**vars(r), "path": str(Path(r.path).relative_to(out))} for r in results]
    return files, found


def _table(layout: str, *rows: dict) -> tuple[list[str], list[tuple], str]:
    """A table of ``rows`` (dicts of the cells they set; the columns of the first row)."""
    names = list(rows[0])
    return names, [tuple(r.get(c) for c in names) for r in rows], layout


_KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"
_SYNC = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"
_ROW = {
    "start": 1,
    "end": 2,
    "deviceId": 1,
    "contextId": 1,
    "streamId": 7,
    "correlationId": 1,
    "globalPid": 1 << 24,
}
#: The review's findings on 922ebf5, each a case of its own: SQLite's + overflowing to a real,
#: a text context not matching the same context as a BLOB, a WITHOUT ROWID table refused.
REVIEWED = [
    {
        _KERNEL: _table(
            "rowid",
            {**_ROW, "staticSharedMemory": I64[1], "dynamicSharedMemory": 5},
            {**_ROW, "staticSharedMemory": I64[0], "dynamicSharedMemory": -5},
            {**_ROW, "staticSharedMemory": None, "dynamicSharedMemory": I64[1]},
        )
    },
    {
        _KERNEL: _table("rowid", {**_ROW, "contextId": "c"}),
        _SYNC: _table("rowid", {**_ROW, "deviceId": 0, "contextId": b"c", "syncType": 1}),
    },
    {
        _KERNEL: _table("without rowid", _ROW, {**_ROW, "deviceId": 2}),
        _SYNC: _table("user rowid", {**_ROW, "deviceId": 0, "syncType": 1}),
    },
]


# no deadline: a conversion's time follows the machine's load (one example took 278 ms, then 43 ms,
# on a shared 2-core machine at load 10), and this test is about what it writes
@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(exports())
@example(REVIEWED[0])
@example(REVIEWED[1])
@example(REVIEWED[2])
def test_converts_as_the_row_by_row_converter(tables: dict) -> None:
    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "x.sqlite"
        _write(src, tables)
        new = _outcome(convert_nsys_file, src, Path(d) / "new")
        old = _outcome(nsys_rowwise.convert_nsys_file, src, Path(d) / "old")
    assert new == old
