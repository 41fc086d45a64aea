"""Typed pipeline parameters: declaration, parsing of ``--set name=value`` and validation."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .errors import PipelineError

_TYPES: dict[str, type] = {"int": int, "float": float, "str": str, "bool": bool}
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


@dataclass(frozen=True)
class Param:
    """One named parameter of the pipeline.

    ``type`` is ``int``, ``float``, ``str`` or ``bool``. ``affects_output=False`` marks knobs that
    never change what a stage writes (the tests' sleeps and forced failures, declared in a test
    registry, not in :data:`~profui.analysis.pipeline.REGISTRY`), so they stay out of cache keys.
    """

    name: str
    type: str
    default: Any
    help: str
    minimum: float | None = None
    affects_output: bool = True
    maximum: float | None = None
    #: the least value but 0, where 0 means "not given" (a peak of 1e-300 TFLOP/s is no device's)
    least_nonzero: float | None = None

    def parse(self, text: str) -> Any:
        """Convert the text of ``--set name=text`` to this parameter's type, or raise PipelineError."""
        raw = text.strip()
        try:
            if self.type == "bool":
                low = raw.lower()
                if low in _TRUE:
                    value: Any = True
                elif low in _FALSE:
                    value = False
                else:
                    raise ValueError(raw)
            elif self.type == "int":
                value = int(raw)
            elif self.type == "float":
                value = float(raw)
            else:
                value = text
        except ValueError:
            raise PipelineError(f"parameter {self.name} takes a {self.type}, not {text!r}") from None
        return self.check(value)

    def check(self, value: Any) -> Any:
        """Validate an already-typed value (e.g. from a run record) and return it normalised."""
        expected = _TYPES[self.type]
        if self.type == "float" and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, expected) or (expected is not bool and isinstance(value, bool)):
            raise PipelineError(f"parameter {self.name} takes a {self.type}, not {value!r}")
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            self._check_number(value)
        return value

    def _check_number(self, value: float) -> None:
        """Refuse an int or float parameter's value out of its declared range."""
        if self.type == "float" and not math.isfinite(value):
            raise PipelineError(f"parameter {self.name} takes a finite number, not {value!r}")
        if self.minimum is not None and value < self.minimum:
            raise PipelineError(f"parameter {self.name} must be >= {self.minimum:g}, not {value!r}")
        top = _INT64_MAX if self.type == "int" and self.maximum is None else self.maximum
        if top is not None and value > top:
            raise PipelineError(f"parameter {self.name} must be <= {_shown(top)}, not {_shown(value)}")
        if self.least_nonzero is not None and value != 0 and abs(value) < self.least_nonzero:
            raise PipelineError(
                f"parameter {self.name} must be 0 or at least {_shown(self.least_nonzero)}, not {_shown(value)}"
            )


_INT64_MAX = 2**63 - 1


def _shown(value: Any) -> str:
    """A value as a refusal quotes it: a 23-digit integer in full would be unreadable."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e16:
        value = int(value)
    if isinstance(value, int):
        text = f"{value:,}"
        return text if len(text) <= 26 else f"{value:.3g}"
    return f"{value:g}"


def parse_assignments(items: Iterable[str]) -> dict[str, str]:
    """Split ``name=value`` strings (``--set``) into a dict; refuse malformed ones."""
    out: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise PipelineError(f"--set takes name=value, not {item!r}")
        out[name] = value
    return out


def resolve_params(
    declared: Mapping[str, Param],
    base: Mapping[str, Any] | None,
    overrides: Mapping[str, str],
) -> dict[str, Any]:
    """Defaults, then ``base`` (a reference run's values), then parsed ``overrides``.

    Unknown override names are refused with the list of valid ones. Values in ``base`` for
    parameters that no longer exist are dropped (the code changed since that run), and so are
    test knobs (``affects_output=False``): they apply to the invocation that sets them only.
    """
    unknown = sorted(set(overrides) - set(declared))
    if unknown:
        valid = ", ".join(sorted(declared))
        raise PipelineError(f"unknown parameter {', '.join(unknown)}; valid parameters: {valid}")
    values = {name: p.default for name, p in declared.items()}
    for name, value in (base or {}).items():
        if name in declared and declared[name].affects_output:
            try:
                values[name] = declared[name].check(value)
            except PipelineError:
                pass  # a value the current code no longer accepts: keep the default
    for name, text in overrides.items():
        values[name] = declared[name].parse(text)
    return values


def typed_params(declared: Mapping[str, Param], values: Mapping[str, Any] | None) -> dict[str, Any]:
    """Defaults overridden by already-typed ``values`` (the notebook's ``summarize(t, top_n=30)``).

    Unknown names are refused with the list of valid ones; each value is validated.
    """
    values = dict(values or {})
    unknown = sorted(set(values) - set(declared))
    if unknown:
        valid = ", ".join(sorted(declared))
        raise PipelineError(f"unknown parameter {', '.join(unknown)}; valid parameters: {valid}")
    out = {name: p.default for name, p in declared.items()}
    for name, value in values.items():
        out[name] = declared[name].check(value)
    return out
