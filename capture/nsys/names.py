"""How Nsight Systems rows are named and kinded in the trace format, the way Kineto names them.

The rest of profui reads Kineto's spellings (``cudaLaunchKernel``, ``Memcpy HtoD (Pinned ->
Device)``, ``Stream Sync``, ``aten::mm`` as a ``cpu_op``), so an Nsight row is named as Kineto
would have named the same activity; what the rename drops is kept in the row's args.
"""

from __future__ import annotations

import re

import pyarrow as pa
import pyarrow.compute as pc

from .arrays import blank_null, int_scalar, map_distinct, text_scalar

#: API version suffix Nsight appends to CUDA runtime names (``cudaLaunchKernel_v7000``); a
#: ``_v2`` that is part of the API's own name (``cudaStreamGetCaptureInfo_v2``) is kept.
_API_VERSION = re.compile(r"_v\d{4,}$")

#: PyTorch's ``--pytorch=autograd-nvtx`` op range: ``aten::mm, seq = 12, op_id = 345`` (then
#: optionally ``, sizes = [...]`` and ``, input_op_ids = [...]``). Its numbers are ASCII digits
#: that fit the int64 ids of the trace (18 at most): a text with a longer one is no op range.
#: RE2 syntax (pyarrow.compute): the op id is followed by the end or by a character that is not
#: a digit (RE2 has no lookahead), and ``rest`` runs to the end of the text. The op is the text
#: up to the first comma and ``, `` is matched once, before ``seq`` or ``op_id``: each character
#: then has one way to match, which lets RE2 take its submatches in one pass (2.3x faster on the
#: three shared exports' 53k NVTX texts than ``[^,]+?(?:, seq = ..)?, op_id``, same matches).
OP_RANGE = (
    r"(?s)^(?P<op>[^,]+), (?:seq = (?P<seq>[0-9]{1,18}), )?op_id = (?P<op_id>[0-9]{1,18})"
    r"(?P<rest>(?:[^0-9].*)?)$"
)

#: The default step range: the one PyTorch's profiler writes; ``profui import --nvtx-step`` sets another.
DEFAULT_STEP_PATTERN = r"^ProfilerStep#\d+$"

#: CUPTI memcpy kinds (``ENUM_CUDA_MEMCPY_OPER`` names, prefix dropped) -> Kineto's spelling.
_COPY_KINDS = {
    "HTOD": "HtoD",
    "DTOH": "DtoH",
    "HTOA": "HtoA",
    "ATOH": "AtoH",
    "ATOA": "AtoA",
    "ATOD": "AtoD",
    "DTOA": "DtoA",
    "DTOD": "DtoD",
    "HTOH": "HtoH",
    "PTOP": "PtoP",
    "UVM_HTOD": "HtoD",
    "UVM_DTOH": "DtoH",
    "UVM_DTOD": "DtoD",
}
#: CUPTI's numbering of the same kinds, for exports without the enum table.
_COPY_KIND_IDS = {1: "HTOD", 2: "DTOH", 3: "HTOA", 4: "ATOH", 5: "ATOA", 6: "ATOD", 7: "DTOA", 8: "DTOD"}
_COPY_KIND_IDS.update({9: "HTOH", 10: "PTOP", 11: "UVM_HTOD", 12: "UVM_DTOH", 13: "UVM_DTOD"})

#: ``ENUM_CUDA_MEM_KIND`` names (prefix dropped) -> Kineto's spelling in a copy's name.
_MEM_KINDS = {
    "PAGEABLE": "Pageable",
    "PINNED": "Pinned",
    "DEVICE": "Device",
    "ARRAY": "Array",
    "MANAGED": "Managed",
    "DEVICE_STATIC": "Device Static",
    "MANAGED_STATIC": "Managed Static",
}
_MEM_KIND_IDS = {0: "PAGEABLE", 1: "PINNED", 2: "DEVICE", 3: "ARRAY", 4: "MANAGED"}
_MEM_KIND_IDS.update({5: "DEVICE_STATIC", 6: "MANAGED_STATIC"})

#: ``ENUM_CUPTI_SYNC_TYPE`` names (prefix dropped) -> Kineto's sync event names.
_SYNC_NAMES = {
    "EVENT_SYNCHRONIZE": "Event Sync",
    "STREAM_WAIT_EVENT": "Stream Wait Event",
    "STREAM_SYNCHRONIZE": "Stream Sync",
    "CONTEXT_SYNCHRONIZE": "Context Sync",
}
_SYNC_IDS = {
    1: "EVENT_SYNCHRONIZE",
    2: "STREAM_WAIT_EVENT",
    3: "STREAM_SYNCHRONIZE",
    4: "CONTEXT_SYNCHRONIZE",
}


def _enum_key(enum: dict[int, str], ids: dict[int, str], value: object, prefix: str) -> str | None:
    if not isinstance(value, int):
        return None
    name = enum.get(value)
    if name is None:
        return ids.get(value)
    return name[len(prefix) :] if name.startswith(prefix) else name


def runtime_name(raw: str) -> tuple[str, str]:
    """``(name, kind)`` of a CUDA API call: the name without Nsight's version suffix, and
    ``runtime`` for the runtime API (``cuda*``) or ``driver`` for the driver API (``cu*``)."""
    name = _API_VERSION.sub("", raw)
    kind = "driver" if name.startswith("cu") and not name.startswith("cuda") else "runtime"
    return name, kind


def runtime_names(raw: pa.Array) -> tuple[pa.Array, pa.Array]:
    """:func:`runtime_name` of each call's name: ``(names, kinds)``."""
    return (
        map_distinct(raw, lambda r: runtime_name(r)[0], pa.string()),
        map_distinct(raw, lambda r: runtime_name(r)[1], pa.string()),
    )


def copy_kind(enum: dict[int, str], value: object) -> str | None:
    """A memcpy's kind (``HtoD`` ...) from its ``copyKind``; None when unknown."""
    key = _enum_key(enum, _COPY_KIND_IDS, value, "CUDA_MEMCPY_KIND_")
    return _COPY_KINDS.get(key) if key else None


def mem_kind(enum: dict[int, str], value: object) -> str:
    """A memory kind as a copy's or memset's name says it (``Pinned``); ``Unknown`` when unknown."""
    key = _enum_key(enum, _MEM_KIND_IDS, value, "CUDA_MEMOPR_MEMORY_KIND_")
    return _MEM_KINDS.get(key, "Unknown") if key else "Unknown"


def copy_names(
    copy_kinds: dict[int, str], mem_kinds: dict[int, str], kind: pa.Array, src: pa.Array, dst: pa.Array
) -> tuple[pa.Array, pa.Array]:
    """Kineto's name of each copy (``Memcpy HtoD (Pinned -> Device)``) and its kind (``HtoD``,
    null when unknown), from its ``copyKind``, ``srcKind`` and ``dstKind``."""
    kinds = map_distinct(kind, lambda v: copy_kind(copy_kinds, v), pa.string())
    src, dst = (map_distinct(m, lambda v: mem_kind(mem_kinds, v), pa.string()) for m in (src, dst))
    names = pc.binary_join_element_wise(
        text_scalar("Memcpy "),
        pc.fill_null(kinds, text_scalar("Unknown")),
        text_scalar(" ("),
        src,
        text_scalar(" -> "),
        dst,
        text_scalar(")"),
        text_scalar(""),
    )
    return names, kinds


def memset_names(mem_kinds: dict[int, str], kind: pa.Array) -> pa.Array:
    """Kineto's name of each memset (``Memset (Device)``) from its ``memKind``."""
    return map_distinct(kind, lambda v: f"Memset ({mem_kind(mem_kinds, v)})", pa.string())


def sync_names(enum: dict[int, str], values: pa.Array) -> pa.Array:
    """Kineto's name of each CUPTI synchronization row (``Stream Sync``); ``Unknown Sync`` else."""

    def name(value: object) -> str:
        key = _enum_key(enum, _SYNC_IDS, value, "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_")
        return _SYNC_NAMES.get(key or "", "Unknown Sync")

    return map_distinct(values, name, pa.string())


def nvtx_ranges(texts: pa.Array, step: re.Pattern[str]) -> dict[str, pa.Array]:
    """``kind``, ``name``, ``op_id``, ``seq`` and ``rest`` of each NVTX range: a ``step`` when
    ``step`` (the user's Python regex) finds the text, a PyTorch op range (:data:`OP_RANGE`) as a
    ``cpu_op`` named by its op (its sequence number, op id and the rest of its text apart), else
    an ``annotation`` named by its text."""
    is_step = pa.array([step.search(t) is not None for t in texts.to_pylist()], pa.bool_())
    m = pc.extract_regex(texts, OP_RANGE)
    is_op = pc.and_(pc.is_valid(m), pc.invert(is_step))
    int_null, str_null = int_scalar(None), text_scalar(None)

    def field(name: str) -> pa.Array:
        return pc.struct_field(m, name)

    def number(name: str) -> pa.Array:  # "" where the group took no part
        return pc.cast(blank_null(field(name)), pa.int64())

    rest = field("rest")
    return {
        "kind": pc.if_else(
            is_step, text_scalar("step"), pc.if_else(is_op, text_scalar("cpu_op"), text_scalar("annotation"))
        ),
        "name": pc.if_else(is_op, field("op"), texts),
        "op_id": pc.if_else(is_op, number("op_id"), int_null),
        "seq": pc.if_else(is_op, number("seq"), int_null),
        "rest": pc.if_else(
            pc.and_(is_op, pc.not_equal(rest, text_scalar(""))),
            pc.utf8_ltrim(rest, characters=", "),
            str_null,
        ),
    }
