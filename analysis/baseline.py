"""A saved baseline: a :func:`~profui.analysis.diff.profile` kept as JSON, read and written
through one typed schema (msgspec).

Every value of a baseline has the type and range :func:`~profui.analysis.diff.profile` gives it
(the stage tables' int64 steps, times and counts; finite numbers), so nothing
:func:`~profui.analysis.diff.diff` computes from it can fail or print nonsense. The schema holds
no free-form value and forbids unknown fields, which bounds the nesting as well: msgspec stops
at the first value deeper than the schema goes, without descending into it.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from profui.capture.format.errors import printable

from .diff import PROFILE_VERSION

#: The profile versions read: 1 (step times device windows where it has no runtime calls, see
#: :func:`~profui.analysis.diff.device_window_steps`) and this one.
VERSIONS = (1, PROFILE_VERSION)

_INT64 = 2**63
Int64 = Annotated[int, msgspec.Meta(ge=-_INT64, le=_INT64 - 1)]
Count = Annotated[int, msgspec.Meta(ge=0, le=_INT64 - 1)]
#: Beyond any time (ns), count, byte or FLOP total a trace holds (a year of an exaFLOP/s machine
#: is 3e25 FLOP), and far below where a difference or a ratio of two would overflow.
MAX_REAL = 1e30
Real = Annotated[float, msgspec.Meta(ge=-MAX_REAL, le=MAX_REAL)]


class TraceInfo(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """Which trace the profile is of (``profile_of``'s ``info``)."""

    path: str
    folder: str
    name: str
    source: str
    ranks: list[Int64]
    gpus: Count
    mfu_basis: str | None = None
    devices: list[str] = msgspec.field(default_factory=list)
    world_size: Count | None = None
    precision: str | None = None


class Step(msgspec.Struct, forbid_unknown_fields=True):
    """One step of the job (``steps/job.parquet``)."""

    step: Int64
    dur_ns: Count


class Row(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """A kernel, host op, runtime call or annotation by normalised name (a runtime call with
    the device events it started)."""

    count: Count
    total_ns: Count
    example: str
    device_events: Count | None = None


class Finding(msgspec.Struct, forbid_unknown_fields=True):
    """A finding of the run (``findings/findings.parquet``), as the diff matches it."""

    category: str
    rank: Int64 | None
    title: str
    severity: str
    recoverable_ns_per_step: Count
    recoverable_share: Real | None


class Profile(msgspec.Struct, forbid_unknown_fields=True):
    """What :func:`~profui.analysis.diff.profile` returns, typed."""

    version: Literal[VERSIONS]  # type: ignore[valid-type]
    trace: TraceInfo
    has_steps: bool
    steps: list[Step]
    numbers: dict[str, Int64 | Real | None]
    kernels: dict[str, Row]
    ops: dict[str, Row]
    annotations: dict[str, Row]
    #: None in a baseline saved before runtime calls were kept: not compared, never all "new"
    runtime: dict[str, Row] | None = None
    #: None in a baseline saved before findings were kept: not compared
    findings: dict[str, Finding] | None = None

    def __post_init__(self) -> None:
        # the per-step diff pairs steps by number: a number twice would pair one silently
        numbers = [s.step for s in self.steps]
        if len(set(numbers)) != len(numbers):
            raise ValueError("a step number is listed twice in `$.steps`")
        if numbers and not self.has_steps:
            raise ValueError("steps listed although `$.has_steps` is false")


class BaselineError(ValueError):
    """Why bytes or a profile are not a baseline of this version; ``str()`` is one line."""


_DECODER = msgspec.json.Decoder(Profile)


def decode(data: bytes) -> dict[str, Any]:
    """The profile held by a baseline file's ``data``; :class:`BaselineError` when it is not
    one of this version."""
    try:
        return msgspec.to_builtins(_DECODER.decode(data))
    except msgspec.ValidationError as exc:
        raise BaselineError(printable(str(exc))) from None
    except msgspec.DecodeError as exc:
        raise BaselineError(f"not JSON ({printable(str(exc))})") from None
    except RecursionError:  # only where the caller's own stack is already deep
        raise BaselineError("nested too deeply") from None


def encode(profile: dict[str, Any]) -> bytes:
    """``profile`` as a baseline file holds it; :class:`BaselineError` when a value does not
    fit the schema (a number that is not finite): nothing is kept that could not be read back."""
    try:
        return msgspec.json.encode(msgspec.convert(profile, Profile)) + b"\n"
    except msgspec.ValidationError as exc:
        raise BaselineError(printable(str(exc))) from None
