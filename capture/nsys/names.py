"""How Nsight Systems rows are named and kinded in the trace format, the way Kineto names them.

The rest of profui reads Kineto's spellings (``cudaLaunchKernel``, ``Memcpy HtoD (Pinned ->
Device)``, ``Stream Sync``, ``aten::mm`` as a ``cpu_op``), so an Nsight row is named as Kineto
would have named the same activity; what the rename drops is kept in the row's args.
"""

from __future__ import annotations

import re

#: API version suffix Nsight appends to CUDA runtime names (``cudaLaunchKernel_v7000``); a
#: ``_v2`` that is part of the API's own name (``cudaStreamGetCaptureInfo_v2``) is kept.
_API_VERSION = re.compile(r"_v\d{4,}$")

#: PyTorch's ``--pytorch=autograd-nvtx`` op range: ``aten::mm, seq = 12, op_id = 345`` (then
#: optionally ``, sizes = [...]`` and ``, input_op_ids = [...]``). Its numbers are ASCII digits
#: that fit the int64 ids of the trace (18 at most): a text with a longer one is no op range.
OP_RANGE = re.compile(
    r"^(?P<op>[^,]+?)(?:, seq = (?P<seq>[0-9]{1,18}))?, op_id = (?P<op_id>[0-9]{1,18})(?![0-9])(?P<rest>.*)$",
    re.S,
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


def copy_kind(enum: dict[int, str], value: object) -> str | None:
    """A memcpy's kind (``HtoD`` ...) from its ``copyKind``; None when unknown."""
    key = _enum_key(enum, _COPY_KIND_IDS, value, "CUDA_MEMCPY_KIND_")
    return _COPY_KINDS.get(key) if key else None


def mem_kind(enum: dict[int, str], value: object) -> str:
    """A memory kind as a copy's or memset's name says it (``Pinned``); ``Unknown`` when unknown."""
    key = _enum_key(enum, _MEM_KIND_IDS, value, "CUDA_MEMOPR_MEMORY_KIND_")
    return _MEM_KINDS.get(key, "Unknown") if key else "Unknown"


def copy_name(kind: str | None, src: str, dst: str) -> str:
    """Kineto's name of a copy: ``Memcpy HtoD (Pinned -> Device)``."""
    return f"Memcpy {kind or 'Unknown'} ({src} -> {dst})"


def sync_name(enum: dict[int, str], value: object) -> str:
    """Kineto's name of a CUPTI synchronization row (``Stream Sync``); ``Unknown Sync`` else."""
    key = _enum_key(enum, _SYNC_IDS, value, "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_")
    return _SYNC_NAMES.get(key or "", "Unknown Sync")


def nvtx_range(text: str, step: re.Pattern[str]) -> tuple[str, str, dict[str, object]]:
    """``(kind, name, args)`` of an NVTX range: a ``step`` when ``step`` matches the text, a
    PyTorch op range as a ``cpu_op`` named by its op (sequence number and op id in args, the
    rest of the text too), else an ``annotation`` named by its text."""
    if step.search(text):
        return "step", text, {}
    m = OP_RANGE.match(text)
    if m:
        args: dict[str, object] = {"op_id": int(m["op_id"])}
        if m["seq"] is not None:
            args["Sequence number"] = int(m["seq"])
        if m["rest"]:
            args["nvtx"] = m["rest"].lstrip(", ")
        return "cpu_op", m["op"], args
    return "annotation", text, {}
