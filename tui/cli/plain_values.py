"""Command-line values taken without pydantic: :class:`PlainValuesCommand`, every profui command's
class.

Typer 0.29 coerces every parameter that has a value, given or not (an option left out is None),
through a pydantic adapter: pydantic's import is ~0.08 s of every command that takes a value
(issue #40: no command loads a library it does not use). profui's parameters are all of a few
plain kinds: text, a path, a flag, an integer (bounded or not) or a number, or a
list of texts or paths. Those are taken here, by pydantic's lax rules for a value given as text,
with its error messages, so that a command line gives the same values and the same errors as
under Typer's own coercion (``tests/tui/test_plain_values.py`` holds them equal, Typer being the
oracle); a path is checked (it exists where it must, is readable ...) by Typer's own function,
which needs no pydantic. Any other kind (a path given as text or bytes or allowing '-', a bounded
float, a bound that clamps, a list with bounds, a click type or parser) goes through Typer's own
coercion; on a Typer without that layer (before 0.29, or after it changed) nothing is changed.
"""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path
from typing import Any, get_args, get_origin

from .help_format import HelpCommand

#: An integer written as pydantic's lax mode reads one from text: digits (``_`` between them)
#: with an optional sign, and an optional fraction of zeros (``"2.0"`` is 2).
_INT = re.compile(r"[+-]?[0-9](?:_?[0-9])*(?:\.0+)?")
#: The messages of pydantic's errors, as Typer shows them.
_NOT_INT = "Input should be a valid integer, unable to parse string as an integer"
_NOT_NUMBER = "Input should be a valid number, unable to parse string as a number"
_AT_LEAST = "Input should be greater than or equal to {}"
_AT_MOST = "Input should be less than or equal to {}"


#: The whitespace pydantic trims from a number's text: Unicode's (``str.isspace``) less the four
#: separators ``\x1c``-``\x1f`` that Python's ``strip`` also takes.
_SPACE = "".join(chr(c) for c in range(0x3001) if chr(c).isspace() and not 0x1C <= c <= 0x1F)


def _int(text: str) -> int:
    s = text.strip(_SPACE)
    if not _INT.fullmatch(s):  # ASCII digits only, as pydantic's
        raise ValueError(_NOT_INT)
    return int(s.split(".", 1)[0])


def _float(text: str) -> float:
    s = text.strip(_SPACE)
    try:
        if not s.isascii():
            raise ValueError
        return float(s)
    except ValueError:
        raise ValueError(_NOT_NUMBER) from None


def _bounded(value: float, info: Any) -> None:
    if info.min is not None and value < info.min:
        raise ValueError(_AT_LEAST.format(info.min))
    if info.max is not None and value > info.max:
        raise ValueError(_AT_MOST.format(info.max))


def _one(kind: type, value: Any, info: Any, param: Any, ctx: Any) -> Any:
    """One value of a plain ``kind``, as pydantic's lax mode takes it (ValueError: its message); a
    path checked by Typer's own rule (it exists where it must, is readable ...: BadParameter)."""
    if kind is str:
        if not isinstance(value, str):
            raise TypeError(value)
        return value
    if kind is Path:
        # "" is Path("."), which Typer checks as "." and names as '': its own rule for that one
        if not isinstance(value, str | Path) or value == "":
            raise TypeError(value)
        checked = _typer_path_checks()(value, info, path_type=None, param=param, ctx=ctx)
        return Path(os.fsdecode(checked))
    if kind is bool:
        if not isinstance(value, bool):
            raise TypeError(value)
        return value
    if kind is int:
        if isinstance(value, bool) or not isinstance(value, int | str):
            raise TypeError(value)
        number: float = _int(value) if isinstance(value, str) else value
        _bounded(number, info)
        return number
    if isinstance(value, bool) or not isinstance(value, int | float | str):  # float
        raise TypeError(value)
    return _float(value) if isinstance(value, str) else float(value)


#: The kinds taken here: one value, and those a list may hold.
_ONE = (str, Path, bool, int, float)
_IN_LIST = (str, Path)


def _plain_kind(annotation: Any, info: Any) -> tuple[type, bool] | None:
    """``(kind, is_list)`` when ``annotation`` and ``info`` are a kind taken here, else None."""
    if info.parser is not None or getattr(info, "click_type", None) is not None:
        return None
    many = get_origin(annotation) is list
    kind = (get_args(annotation) or (None,))[0] if many else annotation
    if kind not in (_IN_LIST if many else _ONE) or (kind is not int and (info.min, info.max) != (None, None)):
        return None
    if getattr(info, "clamp", False):
        return None  # a bound that clamps instead of refusing: Typer's rule
    if kind is Path and (info.path_type is not None or info.allow_dash):
        return None  # a path given as text or bytes, or '-' for a standard stream: Typer's rules
    return kind, many


def _typer_path_checks() -> Any:
    """Typer's own checks of a path (it exists where it must, is readable ...): no pydantic."""
    from typer._param_types import coerce_cli_path

    return coerce_cli_path


@functools.cache
def _plain_coercion() -> type | None:
    """Typer 0.29's runtime coercion of one parameter, made plain; None on a Typer without that
    layer (before 0.29, or after it changed)."""
    try:
        from typer._click.exceptions import BadParameter
        from typer._coercion import RuntimeParam, build_runtime_param
    except ImportError:
        return None

    class Plain(RuntimeParam):
        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            plain = _plain_kind(self.annotation, self.parameter_info)
            if plain is not None:
                kind, many = plain
                try:
                    info = self.parameter_info
                    if many and isinstance(value, list | tuple):
                        return [_one(kind, v, info, param, ctx) for v in value]
                    if not many:
                        return _one(kind, value, info, param, ctx)
                except ValueError as exc:
                    raise BadParameter(str(exc), ctx=ctx, param=param) from None
                except TypeError:
                    pass  # a value of another type (a caller's default): Typer's rules
            return build_runtime_param(param.type_descriptor)._coerce_value(value, param=param, ctx=ctx)

    return Plain


class PlainValuesCommand(HelpCommand):
    """A profui command: its plain-kind parameters take their values as Typer would, without
    loading pydantic (the module says which kinds)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for param in self.params:
            _make_plain(param)

    def get_help_option(self, ctx: Any) -> Any:
        """The command's ``-h/--help`` (made when first asked for), its coercion made plain."""
        option = super().get_help_option(ctx)
        if option is not None:
            _make_plain(option)
        return option


def _make_plain(param: Any) -> None:
    """Give ``param`` the plain coercion where its kind is one taken here."""
    plain = _plain_coercion()
    desc = getattr(param, "type_descriptor", None)
    info = getattr(desc, "parameter_info", None)
    if plain is None or desc is None or info is None or getattr(param, "_runtime_param", 0) is not None:
        return
    if _plain_kind(desc.annotation, info) is None:
        return
    try:
        param._runtime_param = plain(parameter_info=info, annotation=desc.annotation)
    except Exception:  # a Typer whose layer changed shape: its own coercion stays, every command runs
        return
