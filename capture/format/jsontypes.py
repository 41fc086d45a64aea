"""Parsed JSON checked against a dataclass's type hints, field by field, in the standard library
(``capture.format`` holds to pyarrow and the stdlib): the manifest's reader asks it, so a field of
the wrong type is one line naming it instead of a crash wherever the value is first used."""

from __future__ import annotations

from types import UnionType
from typing import Any, Union, get_args, get_origin


class JsonTypeError(ValueError):
    """A value whose type is not the one declared; ``str()`` names where it is."""


_JSON_NAMES = {
    str: "a string",
    bool: "true or false",
    int: "an integer",
    float: "a number",
    list: "a list",
    dict: "an object",
}


def _json_name(value: Any) -> str:
    if value is None:
        return "null"
    for t in (bool, int, float, str, list, dict):
        if isinstance(value, t):
            return _JSON_NAMES[t]
    return type(value).__name__


def check_type(value: Any, hint: Any, where: str) -> None:
    """Raise :class:`JsonTypeError` unless ``value`` is of the type ``hint`` (the types a
    manifest's fields use: str, bool, int, float, Any, ``X | None``, ``list[X]``, ``dict[str, X]``)."""
    if hint is Any:
        return
    args = get_args(hint)
    origin = get_origin(hint)
    if origin in (Union, UnionType):
        if value is None and type(None) in args:
            return
        inner = [a for a in args if a is not type(None)]
        if len(inner) == 1:
            return check_type(value, inner[0], where)
        if any(_fits(value, a) for a in inner):
            return
    elif origin in (list, dict) or hint in (list, dict):
        container = origin or hint
        if isinstance(value, container):
            if container is list:
                for i, item in enumerate(value):
                    check_type(item, args[0] if args else Any, f"{where}[{i}]")
            else:
                for key, item in value.items():
                    check_type(item, args[1] if len(args) == 2 else Any, f"{where}.{key}")
            return
    elif _fits(value, hint):
        return
    raise JsonTypeError(f"'{where}' must be {_describe(hint)}, not {_json_name(value)}")


def _describe(hint: Any) -> str:
    origin = get_origin(hint)
    if origin in (Union, UnionType):
        return " or ".join(_describe(a) for a in get_args(hint) if a is not type(None))
    return _JSON_NAMES.get(origin or hint, "any value")


def _fits(value: Any, hint: Any) -> bool:
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, hint) if isinstance(hint, type) else True
