"""``--format markdown`` of ``profui summary``, ``explain`` and ``diff`` on real traces (issue 39).

The Markdown is read back with a CommonMark parser (markdown-it-py with GFM tables), never by
eye or by the code that wrote it. For every table: every row has the header's cell count (in the
source, counting the unescaped pipes) and each cell renders to exactly its value; the values
come from the command's ``--json`` (full kernel names, counts, the gate's verdicts), and the
rows from the text output at 1000 columns (every row the text shows is a Markdown row with the
same cells; a name the text elides in its middle is whole in the Markdown). No raw HTML, and a
name with every dangerous character survives the round trip.
"""

from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt
from rich.markup import escape as markup_escape

from profui.analysis.formatting import _bare
from profui.tui.cli.fit_table import Column, FittedTable
from profui.tui.cli.markdown import MarkdownSink, escape, escape_line

from realdata import SAMPLES, run_profui, shared_trace

MD = MarkdownIt("commonmark").enable("table")
DANGER = "a|b <float> *x* _y_ `z` [l](u) \\ ~s~ $m$ &amp; #h !"
WIDE = {"COLUMNS": "1000"}


# -- reading Markdown back ------------------------------------------------------------------------


def _no_html(tokens: list[Any]) -> None:
    for t in tokens:
        assert "html" not in t.type, t
        _no_html(t.children or [])


def inline_text(tok: Any) -> str:
    """What an inline token renders as, refusing any markup inside it (emphasis, code, links)."""
    kinds = {c.type for c in tok.children or []}
    assert kinds <= {"text"}, (tok.content, kinds)
    return "".join(c.content for c in tok.children or [])


def _raw_cells(line: str) -> int:
    """Cells of a pipe-table source line: its pipes that no backslash escapes, less one."""
    pipes, slashes = 0, 0
    for ch in line.strip():
        if ch == "|" and slashes % 2 == 0:
            pipes += 1
        slashes = slashes + 1 if ch == "\\" else 0
    return pipes - 1


def md_tables(src: str) -> list[dict[str, Any]]:
    """Each pipe table of ``src``: its title (the bold paragraph right above it, if any), header,
    rows (cell texts as rendered), and the cell count of each source row."""
    toks = MD.parse(src)
    _no_html(toks)
    lines = src.splitlines()
    tables = []
    for i, t in enumerate(toks):
        if t.type != "table_open":
            continue
        title = None
        if i >= 3 and toks[i - 1].type == "paragraph_close":
            kids = [k for k in toks[i - 2].children if k.type != "text" or k.content]
            if [k.type for k in kids] == ["strong_open", "text", "strong_close"]:
                title = kids[1].content
        header: list[str] = []
        rows: list[list[str]] = []
        row: list[str] = []
        j = i + 1
        while toks[j].type != "table_close":
            k = toks[j]
            if k.type == "tr_open":
                row = []
            elif k.type in ("th_open", "td_open"):
                row.append(inline_text(toks[j + 1]))
            elif k.type == "tr_close":
                (rows.append(row) if header else header.extend(row))
            j += 1
        start, end = t.map
        source = [ln for n, ln in enumerate(lines[start:end]) if n != 1 and ln.strip()]
        tables.append(
            {"title": title, "header": header, "rows": rows, "raw": [_raw_cells(s) for s in source]}
        )
    return tables


def check_tables(src: str) -> list[dict[str, Any]]:
    """Every table's rows have its header's cell count, in the source and as parsed."""
    tables = md_tables(src)
    assert tables
    for t in tables:
        n = len(t["header"])
        assert set(t["raw"]) == {n}, (t["title"], t["raw"])
        assert all(len(r) == n for r in t["rows"]), t["title"]
    return tables


def titled(tables: list[dict[str, Any]], title: str) -> dict[str, Any]:
    found = [t for t in tables if t["title"] == title]
    assert len(found) == 1, (title, [t["title"] for t in tables])
    return found[0]


def column(table: dict[str, Any], header: str) -> list[str]:
    i = table["header"].index(header)
    return [r[i] for r in table["rows"]]


def paragraphs(src: str) -> list[str]:
    """The rendered text of each paragraph and heading (emphasis dropped, refusing other markup)."""
    out = []
    toks = MD.parse(src)
    for i, t in enumerate(toks):
        if t.type == "inline" and toks[i - 1].type in ("paragraph_open", "heading_open"):
            kinds = {c.type for c in t.children}
            assert kinds <= {"text", "strong_open", "strong_close", "softbreak"}, (t.content, kinds)
            out.append("".join(c.content for c in t.children))
    return out


# -- reading the text output -----------------------------------------------------------------------


def text_tables(text: str) -> list[dict[str, Any]]:
    """The rich tables of a text output (heavy-head boxes): the title's last line, header, rows."""
    lines = text.splitlines()
    out = []
    for i, line in enumerate(lines):
        if not line.startswith("┏"):
            continue

        def cells(s: str, bar: str) -> list[str]:
            return [c.strip() for c in s.strip()[1:-1].split(bar)]

        rows, j = [], i + 3
        while not lines[j].startswith("└"):
            if lines[j].startswith("│"):
                rows.append(cells(lines[j], "│"))
            j += 1
        out.append({"title": lines[i - 1].strip(), "header": cells(lines[i + 1], "┃"), "rows": rows})
    return out


def same_cell(shown: str, whole: str) -> bool:
    """A text cell is the Markdown cell, or that cell elided in its middle (``…``): each piece
    of it is in the whole name (or in the name made bare, as kernel names are before eliding)."""
    if shown in (whole, _bare(whole)):
        return True
    if "…" not in shown:
        return False
    return all(p in whole or p in _bare(whole) for p in shown.split("…"))


def assert_text_rows_in_markdown(text: str, md: str) -> int:
    """Every table row of the text output is a row of the Markdown table of the same title, in
    the same place, with the same cells; returns the rows compared."""
    mds = md_tables(md)
    compared = 0
    at = 0
    for t in text_tables(text):
        # rich wraps a title wider than its table: its last line ends the Markdown title
        at = next(n for n in range(at, len(mds)) if (mds[n]["title"] or "").endswith(t["title"]))
        m = mds[at]
        assert m["header"] == t["header"], t["title"]
        assert len(m["rows"]) == len(t["rows"]), t["title"]
        for shown, whole in zip(t["rows"], m["rows"], strict=True):
            assert all(same_cell(a, b) for a, b in zip(shown, whole, strict=True)), (t["title"], shown, whole)
            compared += 1
        at += 1
    return compared


# -- the runs ----------------------------------------------------------------------------------------

TRACES = {
    "df_index": ["hta-df_index_resolver-df_index_resolver.json.gz"],
    "two_ranks": ["hta-trace_filter-sampled_rank-0.json.gz", "hta-trace_filter-sampled_rank-1.json.gz"],
    "nsys": ["nsys/h100_2gpu_1s.sqlite"],
    "cpu": None,  # samples/mlp_cpu, a recorded CPU torch run
}


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    """Each case's paths; the two ranks imported into one trace folder, as a user does."""
    out = {}
    for key, names in TRACES.items():
        out[key] = [str(SAMPLES / "mlp_cpu")] if names is None else [str(shared_trace(n)) for n in names]
    folder = tmp_path_factory.mktemp("two_ranks") / "trace"
    p = run_profui("import", *out["two_ranks"], "-o", folder)
    assert p.returncode == 0, p.stderr
    out["two_ranks"] = [str(folder)]
    return out


def _outputs(command: str, paths: list[str]) -> dict[str, Any]:
    md = run_profui(command, *paths, "--format", "markdown")
    text = run_profui(command, *paths, **WIDE)
    js = run_profui(command, *paths, "--json")
    for p in (md, text, js):
        assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr[-2000:]
    return {"md": md.stdout, "text": text.stdout, "json": json.loads(js.stdout)}


@pytest.fixture(scope="module")
def summaries(sources) -> dict[str, dict[str, Any]]:
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {k: pool.submit(_outputs, "summary", p) for k, p in sources.items()}
        return {k: f.result() for k, f in futures.items()}


@pytest.fixture(scope="module")
def explains(sources) -> dict[str, dict[str, Any]]:
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {k: pool.submit(_outputs, "explain", p) for k, p in sources.items()}
        return {k: f.result() for k, f in futures.items()}


# -- summary -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("key", list(TRACES))
def test_summary_markdown_shows_every_row_of_the_text(summaries, key: str) -> None:
    out = summaries[key]
    check_tables(out["md"])
    assert assert_text_rows_in_markdown(out["text"], out["md"]) > 10


@pytest.mark.parametrize("key", list(TRACES))
def test_summary_markdown_cells_are_the_json_values(summaries, key: str) -> None:
    out = summaries[key]
    doc, tables = out["json"], check_tables(out["md"])
    sec = doc["sections"]
    top = doc["params"]["top_n"]
    first = paragraphs(out["md"])[0]
    assert first.startswith(("Top finding", "No finding")), first  # the headline first, bold
    assert out["md"].startswith("**")
    take = titled(tables, "Takeaways")
    cpu_only = doc["trace"]["device_type"] != "gpu"
    charts = [c.replace("gpu_", "device_") if cpu_only else c for c in doc["takeaways"]]
    assert take["rows"] == [[c, t] for c, t in zip(charts, doc["takeaways"].values(), strict=True)]
    assert out["md"].count("GPU") == out["text"].count("GPU")  # no GPU word the text lacks
    kernels = sec["kernels"]["top_by_time"]
    if kernels:
        t = next(
            t for t in tables if (t["title"] or "").startswith("Top ") and t["title"].endswith(" by time")
        )
        names = [re.sub(r"^void ", "", r["name"]) for r in kernels]
        assert column(t, t["header"][0]) == names  # whole names, every one the JSON has
        assert column(t, "count") == [f"{r['count']:,}" for r in kernels]
    if key == "df_index":
        assert any(len(re.sub(r"^void ", "", r["name"])) > 60 for r in kernels)  # the text elides them
    ann = sec["annotations"]["breakdown"]
    if ann:
        t = titled(tables, "Annotations")
        want = sorted(ann, key=lambda r: -r["sum_ns"])[:top]
        assert sorted(column(t, "name")) == sorted(re.sub(r"^void ", "", r["name"]) for r in want)
        assert sorted(map(int, (c.replace(",", "") for c in column(t, "count")))) == sorted(
            r["count"] for r in want
        )
    steps = sec["steps"]["windows"]
    if steps:
        t = titled(tables, "Steps")
        assert len(t["rows"]) == min(top, len(steps))
        assert column(t, "step") == [str(r["step"]) for r in steps[:top]]
        if len(steps) > top:
            assert f"{len(steps) - top} more row(s) not shown" in paragraphs(out["md"])


# -- explain ---------------------------------------------------------------------------------------------


def _explain_text_parts(text: str) -> tuple[list[str], list[tuple[str, str, str]]]:
    """The text's evidence line of each finding (wrapped lines joined) and its path rows."""
    evidence, path, field = [], [], None
    for ln in text.splitlines():
        m = re.match(r"^   (evidence|look at|worst|next): (.*)$", ln)
        if ln.startswith("Critical path of"):
            field = "path"
        elif field == "path":
            if ln.startswith("  "):  # f"  {label:<pad}{time:>10}{share:>7}"
                path.append((ln[2:-17].strip(), ln[-17:-7].strip(), ln[-7:].strip()))
        elif m:
            field = m[1]
            if field == "evidence":
                evidence.append(m[2])
        elif ln.startswith("     ") and field == "evidence":
            evidence[-1] += " " + ln.strip()
        elif not ln.startswith("     "):
            field = None
    return evidence, path


@pytest.mark.parametrize("key", list(TRACES))
def test_explain_markdown_has_each_finding_with_its_evidence_and_the_path(explains, key: str) -> None:
    out = explains[key]
    doc, md = out["json"], out["md"]
    tables = check_tables(md)
    paras = paragraphs(md)
    assert paras[0] == doc["headline"] and md.startswith("**")
    evidence = [t for t in tables if t["header"] == ["evidence", "value"]]
    with_evidence = [f for f in doc["findings"] if f["evidence"]]
    assert len(evidence) == len(with_evidence)
    text_evidence, text_path = _explain_text_parts(out["text"])
    for f, t, shown in zip(with_evidence, evidence, text_evidence, strict=True):
        assert column(t, "evidence") == [e["label"] for e in f["evidence"]]  # whole labels
        # the text's evidence, row for row (its wrapping may break a long word: spaces aside)
        assert "".join("; ".join(f"{a} {b}" for a, b in t["rows"]).split()) == "".join(shown.split())
    for n, f in enumerate(doc["findings"], 1):
        # the headline's finding is not titled twice: its heading says which one it is
        top = n == 1 and f["title"].rstrip(".") in doc["headline"]
        assert (f"{n}. The top finding" if top else f"{n}. {f['title']}") in paras
        assert f"next: {f['next_step']}" in paras
        if f["look_at"]:
            assert f"look at: {'; '.join(f['look_at'])}" in paras  # every name whole
    cp = doc["critical_path"]
    if cp["length_ns"]:
        path = next(t for t in tables if t["title"] and t["title"].startswith("Critical path of"))
        assert len(path["rows"]) == sum(1 for v in cp["by_kind"].values() if v)
        assert [tuple(r) for r in path["rows"]] == text_path


@pytest.mark.parametrize("key", list(TRACES))
def test_explain_markdown_says_the_top_finding_once(explains, key: str) -> None:
    """The headline is the top finding's line (summary and the dashboard say it): the finding's
    own heading does not say it again word for word."""
    doc, md = explains[key]["json"], explains[key]["md"]
    if not doc["findings"]:
        pytest.skip("no finding on this trace")
    title = doc["findings"][0]["title"].rstrip(".")
    assert title in doc["headline"]  # the headline holds the top finding's title (headline.py)
    said = [p for p in paragraphs(md) if title in p]
    assert said == [doc["headline"]], said
    assert "1. The top finding" in paragraphs(md)


# -- diff -------------------------------------------------------------------------------------------------

PAIR = (
    "hta-df_index_resolver-df_index_resolver.json.gz",
    "hta-negative_queue_length_values_check-rank0.json.gz",
)
#: kernel launches fell by 13,290 between the pair: the first condition breaks, the second holds
GATE = ("--fail-if", "kernel_count<-100", "--fail-if", "kernel_count>+1")


def _gate_checks(doc: dict[str, Any]) -> list[dict[str, Any]]:
    gate = doc["gate"]
    return gate["conditions"] if isinstance(gate, dict) else gate


@pytest.fixture(scope="module")
def diffs() -> dict[str, Any]:
    paths = [str(shared_trace(p)) for p in PAIR]
    runs = {
        "md": ("diff", *paths, "--format", "markdown"),
        "text": ("diff", *paths),
        "json": ("diff", *paths, "--json"),
        "gate_md": ("diff", *paths, *GATE, "--format", "markdown"),
        "gate_text": ("diff", *paths, *GATE),
        "gate_json": ("diff", *paths, *GATE, "--format", "json"),
    }
    with ThreadPoolExecutor(max_workers=3) as pool:
        futures = {k: pool.submit(run_profui, *args, **WIDE) for k, args in runs.items()}
        return {k: f.result() for k, f in futures.items()}


def test_diff_markdown_shows_every_row_of_the_text_and_the_json_names(diffs) -> None:
    md, text = diffs["md"], diffs["text"]
    assert md.returncode == 0 and text.returncode == 0, md.stderr + text.stderr
    doc = json.loads(diffs["json"].stdout)
    tables = check_tables(md.stdout)
    assert assert_text_rows_in_markdown(text.stdout, md.stdout) > 20
    paras = paragraphs(md.stdout)
    assert paras[0] == text.stdout.splitlines()[0] and md.stdout.startswith("**")  # the verdict, bold
    assert paras[0].startswith(f"{doc['base']['path']} → {doc['new']['path']}: ")
    for c in doc["setup"]:
        assert f"{c['label']} changed: {c['base']} → {c['new']}" in paras
    assert column(titled(tables, "Metrics"), "key (--fail-if)") == doc["headline"]
    for title, key in (("Kernels", "kernels"), ("Host ops", "ops"), ("Annotations", "annotations")):
        rows = [r for r in doc[key] if r["delta_ns"] or r["base_count"] != r["new_count"]]
        t = titled(tables, f"{title} by change of total time")
        assert column(t, "name") == [r["name"] for r in rows]  # whole: "void at::native::...<4, ...>"
        assert column(t, "calls") == [f"{r['base_count']:,}→{r['new_count']:,}" for r in rows]
    assert not any(t["title"] == "Gate (--fail-if)" for t in tables)


def test_diff_markdown_gives_the_gates_verdict_and_exits_1_when_broken(diffs) -> None:
    md, text, js = diffs["gate_md"], diffs["gate_text"], diffs["gate_json"]
    assert md.returncode == 1 and text.returncode == 1 and js.returncode == 1
    assert md.stderr.splitlines() == text.stderr.splitlines() and len(md.stderr.splitlines()) == 1
    checks = _gate_checks(json.loads(js.stdout))
    gate = titled(check_tables(md.stdout), "Gate (--fail-if)")
    assert gate["rows"] == [
        [g["condition"], "broken" if g["broken"] else "passed", g["line"]] for g in checks
    ]
    assert column(gate, "verdict") == ["broken", "passed"]
    assert assert_text_rows_in_markdown(text.stdout, md.stdout) > 20


def test_diff_says_the_gates_verdict_right_under_its_title(diffs) -> None:
    """A reviewer wants pass or fail first: the paragraph after the title is the gate's verdict
    (GATE: the first of two conditions breaks), in the Markdown as in the text."""
    md, text = diffs["gate_md"], diffs["gate_text"]
    checks = _gate_checks(json.loads(diffs["gate_json"].stdout))
    broken = [g for g in checks if g["broken"]]
    assert [g["condition"] for g in broken] == ["kernel_count<-100"]
    want = f"gate broken: 1 of 2 conditions: {broken[0]['line']}"
    assert paragraphs(md.stdout)[1] == want
    assert text.stdout.splitlines()[1] == want
    assert md.stderr.strip() == f"profui: gate: {broken[0]['line']}"
    # without --fail-if there is no gate line
    assert not any(p.startswith("gate ") for p in paragraphs(diffs["md"].stdout))


def test_diff_tables_have_no_column_empty_on_every_row(diffs) -> None:
    """The "in" column (new / gone) is there where a row is in one run only, left out where
    every row is in both, in the Markdown and the text alike."""
    doc = json.loads(diffs["json"].stdout)
    tables = check_tables(diffs["md"].stdout)
    texts = {t["title"]: t for t in text_tables(diffs["text"].stdout)}
    for title, key in (("Kernels", "kernels"), ("Host ops", "ops"), ("Annotations", "annotations")):
        rows = [r for r in doc[key] if r["delta_ns"] or r["base_count"] != r["new_count"]]
        one_side = [r["status"] for r in rows if r["status"] in ("new", "gone")]
        name = f"{title} by change of total time"
        t = titled(tables, name)
        assert ("in" in t["header"]) == bool(one_side), (name, t["header"])
        assert ("in" in texts[name]["header"]) == bool(one_side)
        if one_side:
            assert sorted(c for c in column(t, "in") if c) == sorted(one_side)
        for i in range(len(t["header"])):
            assert any(r[i] for r in t["rows"]), (name, t["header"][i])


def test_markdown_outputs_appended_one_after_another_stay_apart(diffs, explains, summaries) -> None:
    """The README's CI job writes the diff, then appends explain (``>> report.md``): the diff
    ends on its gate table, and explain's first line must not read as one more row of it. Each
    output ends with a blank line; the two parsed together keep each table's rows."""
    diff_md, explain = diffs["gate_md"].stdout, explains["df_index"]
    assert diff_md.rstrip("\n").endswith("|")  # a table last: the case that broke
    report = diff_md + explain["md"]
    gate = titled(check_tables(report), "Gate (--fail-if)")
    assert len(gate["rows"]) == len(_gate_checks(json.loads(diffs["gate_json"].stdout))) == 2
    assert explain["json"]["headline"] in paragraphs(report)
    # every table of the two, row for row, as each alone
    alone = [len(t["rows"]) for t in md_tables(diff_md) + md_tables(explain["md"])]
    assert [len(t["rows"]) for t in md_tables(report)] == alone
    for out in (diff_md, explain["md"], summaries["cpu"]["md"]):
        assert out.endswith("\n\n") and not out.endswith("\n\n\n"), out[-80:]


# -- escaping and options --------------------------------------------------------------------------------


def test_a_name_with_every_dangerous_character_renders_as_itself() -> None:
    sink = MarkdownSink(markup=False)
    names = [DANGER, "void f<int>(int*, char const*)", "x\\|y", "ends with \\", "| lead", "- dash", "1. one"]
    sink.print(
        FittedTable(DANGER, [Column(DANGER, names, text=True), Column("n", ["1"] * len(names), right=True)])
    )
    for line in (
        DANGER,
        "- a list?",
        "1. an ordered list?",
        "# a heading?",
        "> a quote?",
        "===",
        "    code?",
        "+ x",
    ):
        sink.paragraph(line)
    sink.heading(f"{DANGER} #")
    src = sink.getvalue()
    bold = MarkdownSink()  # markup on, as the summary's console
    bold.print(f"[bold]{markup_escape(DANGER)}[/bold] after")
    src += "\n" + bold.getvalue()
    (t,) = md_tables(src)
    assert t["title"] == DANGER and t["header"] == [DANGER, "n"]
    assert column(t, DANGER) == names and t["raw"] == [2] * (len(names) + 1)
    assert paragraphs(src)[1:] == [
        DANGER,
        "- a list?",
        "1. an ordered list?",
        "# a heading?",
        "> a quote?",
        "===",
        "code?",
        "+ x",
        f"{DANGER} #",
        f"{DANGER} after",
    ]
    assert escape("a\nb") == "a b" and "\n" not in escape_line("x\r\ny")


@pytest.mark.parametrize("command", ["summary", "explain", "diff"])
def test_json_and_format_disagreeing_is_one_line(command: str, tmp_path: Path) -> None:
    args = [str(SAMPLES / "mlp_cpu")] * (2 if command == "diff" else 1)
    p = run_profui(command, *args, "--json", "--format", "markdown")
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and "--json" in p.stderr, p.stderr
    p = run_profui(command, *args, "--format", "html")
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and "html" in p.stderr, p.stderr
    p = run_profui(command, "--help")
    joined = " ".join(p.stdout.replace("\\\n", " ").split())  # an example's shell continuation joined
    assert '--format markdown >> "$GITHUB_STEP_SUMMARY"' in joined
