"""The SQL that reads each activity table of an Nsight export: one result row per table row, in
the table's order, its values typed as the converter needs them and, in ``reason``, why it does
not become an event (NULL when it does), with ``lost`` set when that is for want of a column the
table lacks alone (not a NULL value or a row ending before it starts).

SQLite is dynamically typed and a damaged export may hold text, a real or a BLOB in an INTEGER
column: a value used as an integer is one only where the cell holds an integer (``typeof``).
Columns the export lacks read as NULL, so every query names only the columns the file has.
"""

from __future__ import annotations

from .tables import Export

#: The largest stream or device id: CUPTI's value of a context-wide sync's stream (0xFFFFFFFF)
#: and every other id out of 0..INT32_MAX is none, and a row needs a device in it.
INT32_MAX = 2147483647
_INT32 = f"BETWEEN 0 AND {INT32_MAX}"
NVTX_RANGES = (59, 60)  # NvtxPushPopRange, NvtxStartEndRange
NVTX_MARK = 34
NVTX_DOMAIN_CREATE = 75


class _Columns:
    """SQL expressions for the columns of one table of one export (a column it lacks is NULL)."""

    def __init__(self, export: Export, table: str) -> None:
        self.have = export.columns(table)

    def raw(self, column: str) -> str:
        return f'"{column}"' if column in self.have else "NULL"

    def is_int(self, column: str) -> str:
        return f"typeof({self.raw(column)}) = 'integer'"

    def int(self, column: str) -> str:
        """The cell where it holds an integer, else NULL."""
        if column not in self.have:
            return "NULL"
        return f"(CASE WHEN {self.is_int(column)} THEN {self.raw(column)} END)"

    def text(self, column: str) -> str:
        """The cell where it holds text (or a BLOB, read as its text in Python), else NULL."""
        if column not in self.have:
            return "NULL"
        return f"(CASE WHEN typeof({self.raw(column)}) IN ('text', 'blob') THEN {self.raw(column)} END)"

    def absent(self, column: str) -> str:
        return "0" if column in self.have else "1"

    def pid(self, column: str) -> str:
        """``pid = (g >> 24) & 0xFFFFFF`` of a ``globalPid``/``globalTid``; 0 without one."""
        return f"coalesce(({self.int(column)} >> 24) & 16777215, 0)"

    def tid(self, column: str) -> str:
        """``tid = g & 0xFFFFFF`` of a ``globalTid``; 0 without one."""
        return f"coalesce({self.int(column)} & 16777215, 0)"

    def times(self) -> str:
        """``s`` and ``e``: the start and end where they are integers."""
        return f"{self.int('start')} AS s, {self.int('end')} AS e"

    def times_reason(self, what: str) -> str:
        """The WHEN clauses that say why a row's times leave it out."""
        s, e = self.raw("start"), self.raw("end")
        return (
            f"WHEN NOT {self.is_int('start')} THEN '{what} without a start' "
            f"WHEN NOT {self.is_int('end')} THEN '{what} without an end' "
            f"WHEN {e} < {s} THEN '{what} ending before it starts'"
        )

    def times_lost(self) -> str:
        """The WHEN clause of a row left out for its times: lost when every time that is not
        an integer is in a column the table lacks."""
        whole = f"{self.is_int('start')} AND {self.is_int('end')}"
        lost = " AND ".join(f"({self.is_int(c)} OR {self.absent(c)})" for c in ("start", "end"))
        return f"WHEN NOT ({whole}) THEN {lost}"


#: Per device table, its kind and the columns it adds, as (SQL of the export's columns) -> select list.
def _kernel(c: _Columns) -> str:
    def dims(prefix: str) -> str:
        x, y, z = (c.int(f"{prefix}{a}") for a in "XYZ")
        return (
            f"CASE WHEN {x} IS NOT NULL AND {y} IS NOT NULL AND {z} IS NOT NULL "
            f"THEN '[' || {x} || ',' || {y} || ',' || {z} || ']' END"
        )

    return (
        f"{c.int('demangledName')} AS demangled, {c.int('shortName')} AS short, "
        f"{dims('grid')} AS grid, {dims('block')} AS block, {c.raw('registersPerThread')} AS registers, "
        f"{c.int('staticSharedMemory')} AS static_shared, {c.int('dynamicSharedMemory')} AS dynamic_shared"
    )


def _memcpy(c: _Columns) -> str:
    return (
        f"{c.raw('bytes')} AS bytes, {c.int('copyKind')} AS copy_kind, "
        f"{c.int('srcKind')} AS src_kind, {c.int('dstKind')} AS dst_kind"
    )


def _memset(c: _Columns) -> str:
    return f"{c.raw('bytes')} AS bytes, {c.int('memKind')} AS mem_kind"


def _sync(c: _Columns) -> str:
    return f"{c.int('syncType')} AS sync_type"


DEVICE_TABLES = (
    ("kernel", "CUPTI_ACTIVITY_KIND_KERNEL", _kernel),
    ("memcpy", "CUPTI_ACTIVITY_KIND_MEMCPY", _memcpy),
    ("memset", "CUPTI_ACTIVITY_KIND_MEMSET", _memset),
    ("sync", "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", _sync),
)


def device_rows(export: Export, kind: str, table: str) -> str | None:
    """The rows of the device table ``table`` (None when the export lacks it). ``device`` is
    the cell where it is an integer, valid or not, and ``context`` the CUDA context as stored:
    a sync row's device is its context's (found in Python, which compares contexts as the
    previous converter did), so the device's own test is applied after the query and
    ``reason`` says only why a row's times leave it out."""
    c = _Columns(export, table)
    if not c.have:
        return None
    extra = dict((k, f) for k, _t, f in DEVICE_TABLES)[kind](c)
    return (
        f"SELECT {c.times()}, {c.int('deviceId')} AS device, {c.raw('contextId')} AS context, "
        f"coalesce(CASE WHEN {c.raw('streamId')} {_INT32} THEN {c.int('streamId')} END, -1) AS stream, "
        f"{c.raw('correlationId')} AS correlation, {c.int('correlationId')} AS corr, "
        f"{c.pid('globalPid')} AS pid, CASE {c.times_reason(kind)} END AS reason, "
        f"CASE {c.times_lost()} WHEN {c.raw('end')} < {c.raw('start')} THEN 0 "
        f"ELSE {c.absent('deviceId')} END AS lost, "
        f'{extra} FROM "{table}"'
    )


def cuda_calls(export: Export) -> str | None:
    """The rows of ``CUPTI_ACTIVITY_KIND_RUNTIME`` (None when the export lacks it)."""
    c = _Columns(export, "CUPTI_ACTIVITY_KIND_RUNTIME")
    if not c.have:
        return None
    return (
        f"SELECT {c.times()}, {c.pid('globalTid')} AS pid, {c.tid('globalTid')} AS tid, "
        f"{c.raw('correlationId')} AS correlation, {c.int('correlationId')} AS corr, "
        f"{c.int('nameId')} AS name_id, {c.raw('returnValue')} AS ret, "
        f"CASE {c.times_reason('CUDA call')} END AS reason, CASE {c.times_lost()} ELSE 0 END AS lost "
        'FROM "CUPTI_ACTIVITY_KIND_RUNTIME"'
    )


def nvtx_domains(export: Export) -> str | None:
    """The domains NVTX_EVENTS creates: (domain, text, text id)."""
    c = _Columns(export, "NVTX_EVENTS")
    if "eventType" not in c.have:
        return None
    return (
        f"SELECT {c.int('domainId')} AS domain, {c.text('text')} AS text, {c.int('textId')} AS text_id "
        f'FROM "NVTX_EVENTS" WHERE "eventType" = {NVTX_DOMAIN_CREATE}'
    )


def nvtx_events(export: Export) -> str | None:
    """The ranges and marks of ``NVTX_EVENTS`` (None when it has no ``eventType``). ``reason``
    and ``lost`` are those of a row with a text: one without is left out for that first."""
    c = _Columns(export, "NVTX_EVENTS")
    if "eventType" not in c.have:
        return None
    kinds = ", ".join(str(k) for k in (*NVTX_RANGES, NVTX_MARK))
    mark = f'"eventType" = {NVTX_MARK}'
    return (
        f"SELECT {c.times()}, {mark} AS mark, {c.text('text')} AS text, {c.int('textId')} AS text_id, "
        f"{c.pid('globalTid')} AS pid, {c.tid('globalTid')} AS tid, {c.int('domainId')} AS domain, "
        f"CASE WHEN {mark} THEN CASE WHEN NOT {c.is_int('start')} THEN 'NVTX mark without a time' END "
        f"{c.times_reason('NVTX range')} END AS reason, "
        f"CASE WHEN {mark} THEN NOT {c.is_int('start')} AND {c.absent('start')} {c.times_lost()} "
        f"ELSE 0 END AS lost "
        f'FROM "NVTX_EVENTS" WHERE "eventType" IN ({kinds})'
    )


def processes(export: Export) -> str | None:
    """``PROCESSES`` as (pid, name) (None when the export lacks it)."""
    c = _Columns(export, "PROCESSES")
    if not c.have:
        return None
    return f'SELECT {c.pid("globalPid")} AS pid, {c.raw("name")} AS name FROM "PROCESSES"'


def thread_names(export: Export) -> str | None:
    """The rows of ``ThreadNames`` with an integer ``globalTid``: (g, pid, tid, name id)."""
    c = _Columns(export, "ThreadNames")
    if "globalTid" not in c.have:
        return None
    return (
        f'SELECT "globalTid" AS g, {c.pid("globalTid")} AS pid, {c.tid("globalTid")} AS tid, '
        f'{c.raw("nameId")} AS name_id FROM "ThreadNames" WHERE {c.is_int("globalTid")}'
    )
