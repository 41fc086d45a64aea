"""How Kineto categories map onto profui event kinds, and small value normalisers."""

from __future__ import annotations

#: Kineto ``cat`` of a complete (``X``) event -> profui ``kind``. Old Kineto spelled some
#: categories differently (``Kernel``, ``Runtime``, ``Memcpy``, ``Operator``).
KIND_BY_CAT: dict[str, str] = {
    "cpu_op": "cpu_op",
    "Operator": "cpu_op",
    "python_function": "python",
    "user_annotation": "annotation",
    "gpu_user_annotation": "gpu_annotation",
    "cuda_runtime": "runtime",
    "Runtime": "runtime",
    "mtia_runtime": "runtime",
    "xpu_runtime": "runtime",
    "privateuse1_runtime": "runtime",
    "cuda_driver": "driver",
    "xpu_driver": "driver",
    "privateuse1_driver": "driver",
    "kernel": "kernel",
    "Kernel": "kernel",
    "mtia_ccp_events": "kernel",
    "gpu_memcpy": "memcpy",
    "Memcpy": "memcpy",
    "gpu_memset": "memset",
    "Memset": "memset",
    "cuda_sync": "sync",
    "cpu_instant_event": "instant",
    # CUPTI range-profiler mode: one range per profiled kernel, with SASS counters in args but
    # no stream or correlation. A measured range on the device, not a timed kernel execution.
    "cuda_profiler_range": "gpu_annotation",
}

#: The category each kind is written with by current Kineto; any other source category is kept
#: in the event's args as ``"cat"`` so nothing about the source is lost.
CANONICAL_CAT: dict[str, str] = {
    "cpu_op": "cpu_op",
    "python": "python_function",
    "annotation": "user_annotation",
    "step": "user_annotation",
    "gpu_annotation": "gpu_user_annotation",
    "runtime": "cuda_runtime",
    "driver": "cuda_driver",
    "kernel": "kernel",
    "memcpy": "gpu_memcpy",
    "memset": "gpu_memset",
    "sync": "cuda_sync",
    "instant": "cpu_instant_event",
}

#: Kinds whose events run on a device: their ``device``/``stream`` come from args or pid/tid.
DEVICE_SIDE = frozenset({"kernel", "memcpy", "memset", "sync", "gpu_annotation"})

STEP_PREFIX = "ProfilerStep#"
#: The args key ``profui export`` marks a step with whose name is not ``ProfilerStep#N`` (a JAX
#: ``StepTraceAnnotation``, an NVTX step range), so that importing the export finds the step.
STEP_MARK = "profui_step"

#: A copy's kind in its name, where its args have none: ``HtoD`` in ``Memcpy HtoD (Pageable
#: -> Device)`` (an Arrow/RE2 pattern with one named group, applied to the whole name column).
MEMCPY_NAME_PATTERN = r"^Memcpy (?P<kind>[A-Za-z]+)"

#: The args keys the rules read. Kineto spells the external id ``External id``; some writers
#: ``external id``. ``CAT`` is where a row keeps a non-canonical source category.
EXTERNAL_ID, EXTERNAL_ID_ALT = "External id", "external id"
CORRELATION, DEVICE, STREAM, BYTES, KIND, DIRECTION, SIZE, CAT = (
    "correlation",
    "device",
    "stream",
    "bytes",
    "kind",
    "direction",
    "size",
    "cat",
)

#: Every args key convert._args_rules reads, in the order of the intermediate's key columns (the
#: native tokenizer hands back the raw value text and entry span of each; so does the pure path).
#: ``pid``/``tid``: a named pid/tid is kept in args under these keys.
PID, TID = "pid", "tid"
RULE_KEYS: tuple[str, ...] = (
    EXTERNAL_ID,
    EXTERNAL_ID_ALT,
    CORRELATION,
    DEVICE,
    STREAM,
    BYTES,
    KIND,
    DIRECTION,
    SIZE,
    CAT,
    PID,
    TID,
)

#: Flow categories that only restate ``args.correlation`` (launch -> kernel): counted, not kept.
CORRELATION_FLOWS = ("ac2g", "async_gpu")

#: The category of MTIA device work; its events with a ``direction`` arg are DMA copies.
DMA_CATEGORY = "mtia_ccp_events"

#: MTIA DMA directions -> the CUDA-style memcpy kinds the rest of profui uses.
DIRECTIONS = {
    "HOST_TO_DEVICE": "HtoD",
    "DEVICE_TO_HOST": "DtoH",
    "DEVICE_TO_DEVICE": "DtoD",
    "HOST_TO_HOST": "HtoH",
    "PEER_TO_PEER": "PtoP",
}


def unknown_cat_kind(cat: str | None) -> str:
    """Kind for a category this importer does not know (kept as ``args.cat``)."""
    if cat:
        low = cat.lower()
        if low.endswith("_runtime"):
            return "runtime"
        if low.endswith("_driver"):
            return "driver"
    return "annotation"


def memcpy_kind_from_direction(direction: object) -> str | None:
    """``HtoD`` from MTIA's ``HOST_TO_DEVICE``."""
    if not isinstance(direction, str):
        return None
    return DIRECTIONS.get(direction, direction)


def as_int(value: object) -> int | None:
    """An integer from an int, or a decimal/hex string (AMD writes ``"0x0"``); else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return int(value, 0)
        except ValueError:
            try:
                return int(value)
            except ValueError:
                return None
    return None
