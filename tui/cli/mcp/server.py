"""The MCP server: :mod:`.tools` registered on the official SDK's ``MCPServer``, served over stdio.

Each tool's input schema comes from its typed signature below (the SDK reads it), its output
schema from :mod:`.schemas`; results are structured content with a JSON text copy. The work runs
in a worker thread; its status lines (the importer's, the pipeline's stages) become progress
notifications when the client sent a progress token. Bad input is a tool error carrying the
command line's one line; any other exception is a tool error saying it is a bug (its traceback on
stderr), and the server goes on answering.
"""

from __future__ import annotations

import json
import sys
import traceback
from collections.abc import Callable
from typing import Annotated, Any, Literal

import anyio
import anyio.from_thread
import anyio.to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools.base import Tool
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field, ValidationError

from profui.analysis.top_n import TOP_N

from . import tools
from .schemas import tool_output

INSTRUCTIONS = (
    "profui answers why a deep-learning training step is slow, from a profiler trace: a profui trace "
    "folder (profcap), PyTorch Profiler/Kineto JSON, an Nsight Systems .sqlite export or a JAX "
    "profiler log folder. Start with explain (ranked findings with evidence and the next step), "
    "then top and events to look inside a step, diff to compare two runs or a run against a saved "
    "baseline. Times are integer nanoseconds (*_ns; instants are ns since the epoch), shares are "
    "0-1 fractions, memory is bytes."
)

#: The explain tool's critical-path stretches by default (the command's default is all).
PATH_EVENTS = 40

#: summary's sections, each in a few words (the tool's ``sections`` description).
SECTION_WORDS = (
    "Sections: utilization (device/host busy, over time), kernels (top by time and count, "
    "types), activity (time by kind of work), memory (copies and their bandwidth), allocations "
    "(memory peak, per step, over time, OOMs), precision (time by dtype), flops (FLOPs, MFU), "
    "steps (step windows, stats, outliers, breakdown, per-rank), launch (launch delays, "
    "op-to-kernel), sync (synchronizations), idle (idle time by cause), comm (collectives, "
    "overlap, per rank and step, arrivals, stragglers: the largest), annotations (per name and "
    "step), critical_path (per step by kind), findings (ranked findings and evidence)."
)

TraceArg = Annotated[
    str,
    Field(
        description="Path to a profui trace folder, a Kineto .json/.json.gz file, an Nsight .sqlite "
        "export, a JAX log folder, or a folder of trace files (imported once into profui's cache)."
    ),
]
StepArg = Annotated[
    int | None,
    Field(
        description="Step number (ProfilerStep#N's N, as summary's steps table numbers them); none: default."
    ),
]
RankArg = Annotated[int | None, Field(description="Distributed rank; none: every rank (or the default).")]


async def _run(ctx: Context | None, work: Callable[[tools.Say], dict[str, Any]]) -> Any:
    """Run ``work(say)`` in a worker thread, its lines as progress notifications; a refusal or a
    crash comes back as a tool error (``isError``) with one line."""
    done = [0]

    def say(line: str) -> None:
        done[0] += 1
        if ctx is not None:
            anyio.from_thread.run(ctx.report_progress, float(done[0]), None, line)

    try:
        result = await anyio.to_thread.run_sync(work, say)
    except Exception as exc:
        line = tools.error_line(exc)
        if line is None:
            traceback.print_exc(file=sys.stderr)
            line = tools.bug_line(exc)
        return CallToolResult(content=[TextContent(type="text", text=line)], is_error=True)
    # the text copy compact: an agent reads it whole, and indentation is a third more to read
    text = json.dumps(result, separators=(",", ":"), allow_nan=False)
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=result)


async def list_traces(
    folder: Annotated[
        str,
        Field(
            description="A folder to look in; the folders below it are searched too (hidden ones "
            f"never, at most {tools.LIST_DEPTH} deep and {tools.LIST_ENTRIES} entries)."
        ),
    ],
    ctx: Context,
) -> dict[str, Any]:
    """List the traces at or below a folder: profui trace folders (name, status, start, duration
    in ns, nodes, GPUs, size in bytes); files: the foreign trace files import_trace of this folder
    imports (Kineto JSON, Nsight .sqlite, JAX); imported: the trace folders they were imported
    into if they were (one per job); below: the other trace files in its subfolders (pass each to
    import_trace or the other tools); skipped: files named like traces that are not, with why.
    walk says how far the search went; when walk.cut, it stopped short and only trace folders
    are listed: ask about a subfolder. Reports progress. Call first when you do not know which
    trace to look at."""
    return await _run(ctx, lambda say: tools.list_traces(folder, say))


async def import_trace(path: TraceArg, ctx: Context) -> dict[str, Any]:
    """Import a trace file or folder into profui's cache (once: later calls reuse it) and describe
    it: the trace folder to pass to the other tools, and `profui info --json` (ranks, devices, time
    span in ns since the epoch, event counts by kind, what the import left out). Reports progress."""
    return await _run(ctx, lambda say: tools.import_trace(path, say))


async def summary(
    trace: TraceArg,
    ctx: Context,
    hta_compat: Annotated[
        bool, Field(description="Holistic Trace Analysis semantics (µs rounding, last step dropped).")
    ] = False,
    top: Annotated[int | None, Field(description=f"Rows in the top-N tables (default {TOP_N}).")] = None,
    sections: Annotated[
        list[str],
        Field(
            description="The sections to include (default none: the trace, takeaways and notes "
            "only); 'all' for every one. " + SECTION_WORDS
        ),
    ] = [],  # noqa: B006 (pydantic copies a default; the schema shows [])
) -> dict[str, Any]:
    """Every number of a trace, equal to `profui summary --json --sections ...`: the trace,
    one-sentence takeaways per chart and notes, plus the sections asked for (tables as rows).
    Durations in ns, shares 0-1, bytes. Prefer explain for why a step is slow; ask for the one
    or two sections you need: all of them is 30 KB to over 1 MB (comm's per-collective
    arrivals alone can be 600 KB)."""
    return await _run(ctx, lambda say: tools.summary(trace, hta_compat, top, sections, say))


async def explain(
    trace: TraceArg,
    ctx: Context,
    step: StepArg = None,
    rank: RankArg = None,
    top: Annotated[int | None, Field(description="Keep the first K findings (default: all).")] = None,
    hta_compat: Annotated[bool, Field(description="HTA's semantics and critical-path kinds.")] = False,
    path_events: Annotated[
        int | None,
        Field(
            description="Keep the N longest stretches of the critical path in critical_path.events, "
            "in path order (null: all; a GPU step's path can have thousands)."
        ),
    ] = PATH_EVENTS,
) -> dict[str, Any]:
    """Why the step is slow and what to change, equal to `profui explain --json --path-events
    N`: the headline, findings ranked by recoverable time per step (ns and share) with evidence,
    where to look and the next step, and the critical path of one step on one rank by kind (ns)
    with its longest stretches (events_total and events_truncated say how many there are).
    Defaults to the job's median analysed step on its slowest rank. The best first call on a
    trace."""
    return await _run(ctx, lambda say: tools.explain(trace, step, rank, top, hta_compat, path_events, say))


async def diff(
    base: Annotated[str, Field(description="The baseline: a trace path, or a saved baseline's NAME.")],
    new: Annotated[str, Field(description="The run to compare: a trace path, or a saved baseline's NAME.")],
    ctx: Context,
    fail_if: Annotated[
        list[str] | None,
        Field(
            description="Gate conditions, e.g. 'step_p50>+5%' or 'idle_pct>+3pt' (METRIC is a key of metrics)."
        ),
    ] = None,
    top: Annotated[int, Field(description="Kernels and annotations listed (0: all; at least 0).")] = TOP_N,
) -> dict[str, Any]:
    """What changed between two runs, equal to `profui diff --json`: a verdict on step time against
    step-to-step noise, metrics (base, new, change), kernels/ops/annotations that moved (ns), findings
    that grew or shrank, per-step times, and the gate's verdict on each fail_if condition."""
    return await _run(ctx, lambda say: tools.diff(base, new, fail_if, top, say))


async def top(
    trace: TraceArg,
    ctx: Context,
    what: Annotated[
        Literal["kernels", "ops", "annotations"],
        Field(description="What to rank: kernels, host ops or annotations."),
    ] = "kernels",
    step: Annotated[
        int | None, Field(description="One step (ProfilerStep#N's N); none: the whole trace.")
    ] = None,
    rank: RankArg = None,
    n: Annotated[int, Field(description="Rows to return (1 to 1000).")] = 10,
) -> dict[str, Any]:
    """The top kernels, host ops or annotations of one step (and rank), or of the whole trace, by
    total time: side (cpu or gpu), name, count, total_ns, mean_ns, max_ns and share of its side's
    window. A step's kernels are the ones it launched (matched by correlation, as the steps table
    counts them: each kernel in one step even when the device runs behind); its ops start in its
    host window, their time cut at the window's end; annotations are host ranges in the host
    window and device ranges in the device window, each cut to it (as summary's annotations
    per_step). No rows: note says why (a CPU-only run has no kernels: ask for ops)."""
    return await _run(ctx, lambda say: tools.top(trace, what, step, rank, n, say))


async def events(
    trace: TraceArg,
    ctx: Context,
    rank: Annotated[int | None, Field(description="The rank (required when the trace has several).")] = None,
    step: Annotated[
        int | None,
        Field(
            description="This step's events: host events in its host window, the device work it "
            "launched (by correlation), device events without a correlation in its device window."
        ),
    ] = None,
    start_ns: Annotated[
        int | None, Field(description="Window start, ns since the epoch (as every *_ns instant).")
    ] = None,
    end_ns: Annotated[int | None, Field(description="Window end (exclusive), ns since the epoch.")] = None,
    limit: Annotated[int, Field(description="Most rows returned, 1 to 5000.")] = 500,
) -> dict[str, Any]:
    """The raw events of one rank that start in a window (a step, or start_ns..end_ns, or the whole
    trace) as compact rows: columns ts_ns, dur_ns (ns), kind, name, tid, device, stream,
    correlation. Bounded: at most limit rows, with the total count and truncated when cut; a
    window reaching past the trace is clipped to it."""
    return await _run(ctx, lambda say: tools.events(trace, rank, step, start_ns, end_ns, limit, say))


async def memory_peak(trace: TraceArg, ctx: Context, rank: RankArg = None) -> dict[str, Any]:
    """The allocated-memory peak of each device (bytes, when in ns since the epoch, the op,
    annotation and step holding it, reserved peak, OOM events) and the largest allocations live
    at the highest peak. A trace recorded without memory events says so (has_memory_events false)."""
    return await _run(ctx, lambda say: tools.memory_peak(trace, rank, say))


class ProfuiServer(MCPServer):
    """The SDK's server, with arguments that fail the input schema refused in one line (the SDK's
    own message is pydantic's, several lines long)."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        """Call tool ``name``; arguments the schema refuses, or that it does not have, give
        ``profui: NAME: ARG: why; ...``."""
        tool = self._tool_manager.get_tool(name)
        properties = tool.parameters.get("properties", {}) if tool else {}
        unknown = sorted(set(arguments or {}) - set(properties)) if tool else []
        if unknown:
            valid = ", ".join(properties)
            return CallToolResult(
                content=[
                    TextContent(
                        type="text",
                        text=f"profui: {name}: unknown argument {', '.join(map(repr, unknown))} "
                        f"(arguments: {valid})",
                    )
                ],
                is_error=True,
            )
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if not isinstance(cause, ValidationError):
                raise
            why = "; ".join(
                f"{'.'.join(map(str, e['loc'])) or 'arguments'}: {e['msg'].lower()}" for e in cause.errors()
            )
            return CallToolResult(
                content=[TextContent(type="text", text=f"profui: {name}: {why}")], is_error=True
            )


TOOLS = (list_traces, import_trace, summary, explain, diff, top, events, memory_peak)


def build() -> MCPServer:
    """The server with every tool registered, each with its output schema."""
    registered = []
    for fn in TOOLS:
        tool = Tool.from_function(
            fn,
            annotations=ToolAnnotations(read_only_hint=fn is not import_trace, open_world_hint=False),
            structured_output=True,
        )
        tool.fn_metadata.output_schema = tool_output(tool.name)
        tool.parameters["additionalProperties"] = False  # an unknown argument is refused (call_tool)
        registered.append(tool)
    from importlib.metadata import PackageNotFoundError, version

    try:
        ours = version("profui")
    except PackageNotFoundError:
        ours = ""
    return ProfuiServer(
        "profui", version=ours, instructions=INSTRUCTIONS, tools=registered, log_level="WARNING"
    )


def serve() -> None:
    """Serve the tools over stdio until the client closes the connection."""
    build().run("stdio")
