"""Writes :mod:`profui.analysis.result_tables`, the typed accessors of every stage's outputs, and
:mod:`profui.analysis.result_rows`, the types of their rows and documents.

``python -m profui.analysis.result_codegen`` regenerates both from the stage graph (each
stage's declared outputs, :data:`.pipeline.registry.STAGES`) and the declared schemas (each
table's columns, :data:`.schemas.TABLES`; each JSON output's keys, :data:`.schemas.JSON_KEYS`),
as Perfetto generates its table classes: per table a ``…Row`` TypedDict of its columns (Python
types from the declared dtypes, ``| None`` where a column is nullable, not required where it is
optional), per stage a class with one typed property per output, and one property per stage
on :class:`.pipeline.result.Result`. ``--check`` exits 1 when a committed module differs. The
row types sit in a module of their own, which the accessors import for typing only: a result is
read without building them (a hundred TypedDict classes, ~5 ms at import, on a warm open too).

Both sit beside the pipeline, not in it: the accessors are read by the stage bodies' own
modules (the findings' rules), which the pipeline imports; the overview's value types are the
JSON Schema's (:func:`.json_schema.overview_schema`), whose module reads the pipeline's.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl

from .pipeline.registry import STAGES
from .schemas import JSON_KEYS, OVERVIEW_KEYS, TABLES, Column

#: The generated modules: the accessors and the row types.
TARGET = Path(__file__).parent / "result_tables.py"
ROWS_TARGET = Path(__file__).parent / "result_rows.py"
MODULE = "profui.analysis.result_codegen"

#: The Python type of each JSON output's declared keys (:data:`.schemas.JSON_KEYS` says which keys
#: there are; the generator refuses a key list that differs). ``ingest/trace.json``'s overview is
#: the JSON Schema's (its keys the declared :data:`.schemas.OVERVIEW_KEYS`).
JSON_TYPES: dict[tuple[str, str], dict[str, str] | str] = {
    ("ingest", "trace.json"): {"overview": "Overview", "fingerprint": "str"},
    ("steps", "steps.json"): {
        "has_markers": "bool",
        "renumbered": "bool",
        "note": "str",
        "step_annotation": "str",
    },
    ("allocations", "allocations.json"): {
        "events": "int",
        "unreadable": "int",
        "devices": "int",
        "note": "str",
    },
    # the Summary itself, in memory and read back from disk (artifacts.load_file)
    ("summary", "summary.json"): "Summary",
    # {answer id: sentence}: the ids are takeaways.CHARTS', data not declared keys
    ("summary", "takeaways.json"): "dict[str, str]",
}
#: Keys a JSON output declares beside its own: ``trace.json``'s overview's.
_NESTED_KEYS: dict[tuple[str, str], tuple[str, ...]] = {("ingest", "trace.json"): OVERVIEW_KEYS}

_JSON_PY = {"integer": "int", "number": "float", "string": "str", "boolean": "bool"}


def camel(name: str) -> str:
    """``critical_path`` → ``CriticalPath``."""
    return "".join(part.capitalize() for part in name.split("_"))


def py_type(dtype: pl.DataType) -> str:
    """The Python type of a Polars dtype's values (``list[int]`` for ``List(Int64)``)."""
    if dtype.is_integer():
        return "int"
    if dtype.is_float():
        return "float"
    if dtype == pl.String:
        return "str"
    if dtype == pl.Boolean:
        return "bool"
    if isinstance(dtype, pl.List):
        inner = dtype.inner
        return f"list[{py_type(inner() if isinstance(inner, type) else inner)}]"
    raise TypeError(f"no Python type for the Polars dtype {dtype}")


def column_type(col: Column) -> str:
    """A column's value type: its dtype's, ``| None`` where the column is nullable."""
    base = py_type(col.dtype)
    return f"{base} | None" if col.nullable else base


def _json_schema_type(schema: dict[str, Any]) -> str:
    if "enum" in schema:
        return "Literal[" + ", ".join(f'"{v}"' for v in schema["enum"]) + "]"
    kinds = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
    names = [
        f"list[{_json_schema_type(schema['items'])}]" if k == "array" else _JSON_PY[k]
        for k in kinds
        if k != "null"
    ]
    return " | ".join(names + (["None"] if "null" in kinds else []))


def overview_types() -> dict[str, str]:
    """The overview's keys and their Python types, from its JSON Schema."""
    from .json_schema import overview_schema

    props = overview_schema()["properties"]
    return {k: _json_schema_type(props[k]) for k in OVERVIEW_KEYS}


def row_class(stage: str, file: str) -> str:
    """The name of the Row TypedDict of ``stage``'s ``file`` table."""
    return f"{camel(stage)}{camel(file.removesuffix('.parquet'))}Row"


def doc_class(stage: str, file: str) -> str:
    """The Python type of ``stage``'s JSON output ``file``."""
    typ = JSON_TYPES[(stage, file)]
    return f"{camel(stage)}{camel(file.removesuffix('.json'))}Doc" if isinstance(typ, dict) else typ


def _check_json_keys() -> None:
    if set(JSON_TYPES) != set(JSON_KEYS):
        raise ValueError(f"JSON_TYPES names {sorted(JSON_TYPES)}, schemas.JSON_KEYS {sorted(JSON_KEYS)}")
    for key, typ in JSON_TYPES.items():
        if not isinstance(typ, dict):  # a type of its own (the Summary) or a map keyed by data
            continue
        mine = tuple(typ) + _NESTED_KEYS.get(key, ())
        if sorted(mine) != sorted(JSON_KEYS[key]):
            raise ValueError(
                f"{key[0]}/{key[1]}: JSON_TYPES keys {sorted(mine)}, declared {sorted(JSON_KEYS[key])}"
            )


def _doc(text: str, indent: str) -> str:
    return f'{indent}"""{text}"""'


def _typeddict(
    name: str, doc: str, fields: list[tuple[str, str]], optional: list[tuple[str, str]]
) -> Iterator[str]:
    """A TypedDict (its optional keys in a ``total=False`` subclass: 3.10 has no NotRequired)."""
    if optional:
        yield f"class _{name}Required(TypedDict):"
        yield from (f"    {k}: {t}" for k, t in fields)
        yield ""
        yield ""
        yield f"class {name}(_{name}Required, total=False):"
        yield _doc(doc, "    ")
        yield ""
        yield from (f"    {k}: {t}" for k, t in optional)
    else:
        yield f"class {name}(TypedDict):"
        yield _doc(doc, "    ")
        yield ""
        yield from (f"    {k}: {t}" for k, t in fields)
    yield ""
    yield ""


_REGENERATE = (
    "after changing a stage's outputs or a table's columns; ``tests/analysis/test_result_tables.py``",
    "fails while it differs.",
)


def _rows_header() -> Iterator[str]:
    yield f'"""Row and document types of every stage\'s outputs: generated by ``python -m {MODULE}``; do not edit.'
    yield ""
    yield "Per table a ``…Row`` TypedDict of its declared columns (:mod:`profui.analysis.schemas`), per"
    yield "JSON output one of its declared keys; :mod:`.result_tables`' accessors return them. Regenerate it"
    yield from _REGENERATE
    yield '"""'
    yield ""
    yield "from __future__ import annotations"
    yield ""
    yield "from typing import Literal, TypedDict"
    yield ""
    yield ""


def _header() -> Iterator[str]:
    yield f'"""Typed accessors of every stage\'s outputs: generated by ``python -m {MODULE}``; do not edit.'
    yield ""
    yield "Per stage a class with one property per declared output (:mod:`.pipeline.registry`): a table"
    yield "as a frame and its rows typed (:mod:`.result_rows`), a JSON output as its document, and"
    yield ":class:`StageAccessors`, the per-stage properties of :class:`.pipeline.result.Result`. Regenerate it"
    yield from _REGENERATE
    yield '"""'
    yield ""
    yield "from __future__ import annotations"
    yield ""
    yield "from collections.abc import Mapping"
    yield "from typing import TYPE_CHECKING, Any, cast"
    yield ""
    yield "# none imported to read a result: a dashboard drawn from what was kept loads no polars"
    yield "if TYPE_CHECKING:"
    yield "    from pathlib import Path"
    yield ""
    yield "    import polars as pl"
    yield ""
    yield "    from profui.analysis import result_rows as r"
    yield "    from profui.analysis.summary_document import Summary"
    yield ""
    yield ""
    yield "class OutputMissing(LookupError):"
    yield '    """A stage that was not run, or an output its result does not hold, was read (no KeyError:'
    yield '    a caller catching a missing key of its own must not swallow it)."""'
    yield ""
    yield ""
    yield "class StageOutputs:"
    yield '    """One stage\'s outputs (``{output file: value}``), read by typed properties."""'
    yield ""
    yield '    __slots__ = ("_stage", "_out")'
    yield ""
    yield "    def __init__(self, stage: str, out: Mapping[str, Any]) -> None:"
    yield "        self._stage = stage"
    yield "        self._out = out"
    yield ""
    yield "    def _get(self, file: str) -> Any:"
    yield "        try:"
    yield "            return self._out[file]"
    yield "        except KeyError:"
    yield '            raise OutputMissing(f"the {self._stage} stage\'s result holds no {file}") from None'
    yield ""
    yield "    def has(self, file: str) -> bool:"
    yield '        """Whether the result holds output ``file`` of this stage."""'
    yield "        return file in self._out"
    yield ""
    yield ""


def generate_rows() -> str:
    """The text of :mod:`profui.analysis.result_rows`."""
    _check_json_keys()
    lines = list(_rows_header())
    ov = overview_types()
    lines += _typeddict(
        "Overview",
        "What was analysed: ``ingest/trace.json``'s ``overview``, the Summary's ``trace``.",
        list(ov.items()),
        [],
    )
    for (stage, file), typ in JSON_TYPES.items():
        if isinstance(typ, dict):
            lines += _typeddict(doc_class(stage, file), f"``{stage}/{file}``.", list(typ.items()), [])
    for st in STAGES:
        for file in st.outputs:
            if st.files or not file.endswith(".parquet"):
                continue
            tbl = TABLES[(st.name, file)]
            req = [(c.name, column_type(c)) for c in tbl.columns if not c.optional]
            opt = [(c.name, column_type(c)) for c in tbl.columns if c.optional]
            lines += _typeddict(
                row_class(st.name, file), f"A row of ``{st.name}/{file}``: {tbl.doc}.", req, opt
            )
    return "\n".join(lines).rstrip("\n") + "\n"


def generate() -> str:
    """The text of :mod:`profui.analysis.result_tables`."""
    _check_json_keys()
    lines = list(_header())
    for st in STAGES:
        lines += _stage_class(st.name, st.outputs, st.help, st.files)
    lines.append("class StageAccessors:")
    lines.append(
        '    """One property per stage: its outputs; reading a stage that was not run raises :class:`OutputMissing`."""'
    )
    lines.append("")
    lines.append("    outputs: Mapping[str, Mapping[str, Any]]")
    lines.append("")
    lines.append("    def _stage(self, stage: str) -> Mapping[str, Any]:")
    lines.append("        try:")
    lines.append("            return self.outputs[stage]")
    lines.append("        except KeyError:")
    lines.append('            ran = ", ".join(self.outputs) or "none"')
    lines.append(
        '            raise OutputMissing(f"the {stage} stage was not run (stages run: {ran})") from None'
    )
    for st in STAGES:
        cls = f"{camel(st.name)}Outputs"
        lines.append("")
        lines.append("    @property")
        lines.append(f"    def {st.name}(self) -> {cls}:")
        lines.append(_doc(f"The ``{st.name}`` stage's outputs.", "        "))
        lines.append(f'        return {cls}("{st.name}", self._stage("{st.name}"))')
    return "\n".join(lines) + "\n"


def _stage_class(stage: str, outputs: tuple[str, ...], doc: str, files: bool) -> Iterator[str]:
    yield f"class {camel(stage)}Outputs(StageOutputs):"
    yield _doc(f"The ``{stage}`` stage's outputs: {doc}.", "    ")
    yield ""
    yield "    __slots__ = ()"
    for file in outputs:
        stem = file.rsplit(".", 1)[0]
        yield ""
        yield "    @property"
        if files:  # files the stage wrote, handed on as paths (all in one folder)
            yield f"    def {stem}(self) -> Path:"
            yield _doc(f"``{file}``: the path of the file the stage wrote.", "        ")
            yield f'        return cast("Path", self._get("{file}"))'
        elif file.endswith(".parquet"):
            row = f"r.{row_class(stage, file)}"
            yield f"    def {stem}(self) -> pl.DataFrame:"
            yield _doc(f"``{file}``: {TABLES[(stage, file)].doc}.", "        ")
            yield f'        return cast("pl.DataFrame", self._get("{file}"))'
            yield ""
            yield f"    def {stem}_rows(self) -> list[{row}]:"
            yield _doc(f"``{file}``'s rows.", "        ")
            yield f'        return cast("list[{row}]", self.{stem}.to_dicts())'
        else:
            typ = doc_class(stage, file)
            typ = f"r.{typ}" if isinstance(JSON_TYPES[(stage, file)], dict) else typ
            yield f"    def {stem}(self) -> {typ}:"
            yield _doc(f"``{file}``.", "        ")
            yield f'        return cast("{typ}", self._get("{file}"))'
    yield ""
    yield ""


def main(argv: list[str] | None = None) -> int:
    """Write the modules (``--check``: exit 1 when a committed one differs, writing nothing)."""
    args = sys.argv[1:] if argv is None else argv
    texts = {TARGET: generate(), ROWS_TARGET: generate_rows()}
    if "--check" in args:
        stale = [p for p, t in texts.items() if not p.exists() or p.read_text(encoding="utf-8") != t]
        for path in stale:
            print(f"{path}: differs from what {MODULE} generates; run python -m {MODULE}", file=sys.stderr)
        return 1 if stale else 0
    for path, text in texts.items():
        path.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
