"""The ``profui`` command line (Typer). Each sub-command lives in its own module."""

from __future__ import annotations

import gc
import inspect
import os
import sys

import typer
from typer.core import TyperCommand

from profui.capture.format import TraceFormatError

from . import (
    analyze_cmd,
    diff_cmd,
    explain_cmd,
    export_cmd,
    import_cmd,
    info_cmd,
    mcp_cmd,
    open_cmd,
    schema_cmd,
    summary_cmd,
)
from .errors import EXIT_BAD_INPUT, UserError, report
from .help_format import HelpGroup
from .plain_values import PlainValuesCommand

app = typer.Typer(
    name="profui",
    help=(
        "Terminal-native profiler for deep-learning training.\n\n"
        "Record a run with `profcap -- python train.py`, then `profui open trace/` to explore it, "
        "or `profui summary trace/` for the numbers. Existing PyTorch Profiler (Kineto) JSON "
        "traces, Nsight Systems exports (.sqlite) and JAX profiler traces work too: "
        "`profui import rank0.json.gz -o trace/`; `profui export` writes Perfetto's format."
    ),
    no_args_is_help=True,
    # click's plain help, not Typer's rich panels (.help_format says why)
    rich_markup_mode=None,
    cls=HelpGroup,
    pretty_exceptions_enable=False,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _show_help(ctx: typer.Context, _param: object, value: bool) -> None:
    """``profui -h``: the help, as the option Typer adds would show it."""
    if value and not ctx.resilient_parsing:
        typer.echo(ctx.get_help(), color=ctx.color)
        ctx.exit()


# profui's own -h/--help, a plain flag (default False) in place of the one Typer adds: Typer 0.29
# coerces that one's unset value (None) through pydantic, which put pydantic (~0.05 s) into every
# `profui CMD ...` even where nothing else needs it (`profui CMD --help`). Same names, same help.
@app.callback()
def _top_level(
    _help: bool = typer.Option(
        False,
        "--help",
        "-h",
        is_eager=True,
        expose_value=False,
        callback=_show_help,
        help="Show this message and exit.",
    ),
) -> None:
    pass


for _module in (
    open_cmd,
    import_cmd,
    info_cmd,
    summary_cmd,
    explain_cmd,
    analyze_cmd,
    diff_cmd,
    export_cmd,
    mcp_cmd,
    schema_cmd,
):
    _module.register(app)


def unwrapped(doc: str) -> str:
    """A command's docstring as ``--help`` should read it: each paragraph one line, which click
    wraps at the terminal's width (and the first is the command list's short help, whole); a
    ``\\b`` paragraph (examples) keeps its lines."""
    paragraphs = inspect.cleandoc(doc).split("\n\n")
    return "\n\n".join(
        p if p.startswith("\b") else " ".join(line.strip() for line in p.splitlines()) for p in paragraphs
    )


for _command in app.registered_commands:
    _doc = _command.help or (_command.callback.__doc__ if _command.callback else None)
    if _doc:
        _command.help = unwrapped(_doc)
        # the command list shows the first paragraph whole (click would cut it at ~45 columns)
        _command.short_help = _command.short_help or _command.help.split("\n\n", 1)[0]
    if _command.cls in (None, TyperCommand):  # Typer's default: values and help as profui's
        _command.cls = PlainValuesCommand


def main() -> None:
    """Entry point of the ``profui`` console script."""
    # profui makes no BLAS call, but numpy (under pyarrow and polars) starts OpenBLAS's worker
    # threads on import, which spin for a while: ~0.06 CPU-s of every command on 2 cores. Set
    # before numpy loads; a user's own setting wins; profui's child processes are its own workers.
    if not os.environ.get("OPENBLAS_NUM_THREADS"):
        os.environ["OPENBLAS_NUM_THREADS"] = "1"
    _allocator_settings()
    _small_pages_where_reported()
    try:
        code = app(standalone_mode=False)
    except typer.TyperException as exc:
        _usage(exc)
    except (TraceFormatError, UserError) as exc:
        report(str(exc))
    except KeyboardInterrupt:
        report("interrupted", code=130)
    except typer.Abort:  # Typer's word for an end of input (EOF) where a command read one
        report("aborted", code=1)
    except OSError as exc:
        # the operating system refused a path the user gave (too long, under a file, read-only,
        # not UTF-8 ...): their input, so one line; an OSError without a path is not: a bug
        if exc.filename is None:
            _bug()
        report(f"{_shown(exc.filename)}: {(exc.strerror or str(exc)).lower()}")
    except Exception:
        _bug()

    # the interpreter's exit collects every object a command left (a summary's: ~0.09 CPU-s of
    # ~0.8) only to free the process's memory, which exit frees anyway: frozen objects are skipped
    gc.freeze()
    if code == 130:  # Typer's word for a Ctrl-C it caught (a KeyboardInterrupt), said by nothing else
        report("interrupted", code=130)
    if isinstance(code, int) and code:
        raise SystemExit(code)  # typer.Exit(code) from a command, returned outside standalone mode


#: jemalloc's settings that choose its arenas: where a user's ``_RJEM_MALLOC_CONF`` names one,
#: profui adds none of its own.
_ARENA_SETTINGS = ("narenas", "percpu_arena")
#: jemalloc's setting of how long freed pages stay muzzy (given back lazily): where a user's
#: ``_RJEM_MALLOC_CONF`` names it, profui adds none of its own.
_MUZZY_SETTING = "muzzy_decay_ms"


def _allocator_settings() -> None:
    """Ask jemalloc, Polars' allocator, for one arena per CPU this process may run on and to give
    freed pages back at once rather than lazily, each added to a user's own
    ``_RJEM_MALLOC_CONF`` unless it chooses that setting itself; Linux only. Set before Polars
    loads, which reads it (after its own defaults, so these win over them).

    Per-CPU arenas (``percpu_arena:percpu``) where jemalloc takes them; where the process may use
    only some of the machine's CPUs (``taskset``, a Slurm or container cpuset) jemalloc refuses
    them with a line on stderr, and there it gets that many arenas (``narenas``) instead.

    Why the arenas: by default jemalloc hands threads arenas from four per CPU, and the pages one
    stage's threads free in theirs are not reused by the next stage's allocations in another, so
    a huge trace's summary peaks higher and faults more fresh pages in (``benchmarks/scale.py``).

    Why ``muzzy_decay_ms:0``: with Polars' 1000, freed pages left unused for its dirty decay
    (500 ms, unchanged) are given back with ``MADV_FREE``, which leaves them in the process's
    resident memory (and its cgroup's) until the kernel runs short, for up to a second more; with
    0 they are given back with ``MADV_DONTNEED`` and leave it. A huge trace's summary frees
    several hundred MB between stages, which counted in its peak; pages reused within the dirty
    decay are reused as before, later ones are faulted in again (some system CPU)."""
    if not sys.platform.startswith("linux") or "polars" in sys.modules:
        return
    conf = os.environ.get("_RJEM_MALLOC_CONF", "").strip().strip(",")
    named = {pair.split(":", 1)[0].strip() for pair in conf.split(",")}
    mine = []
    if not named & set(_ARENA_SETTINGS):
        from profui.capture.conversion.cpus import usable_cpus

        usable = usable_cpus()
        # jemalloc's own test (malloc_cpu_count_is_deterministic) before it takes per-CPU arenas
        per_cpu = os.sysconf("SC_NPROCESSORS_ONLN") == os.sysconf("SC_NPROCESSORS_CONF") == usable
        mine.append("percpu_arena:percpu" if per_cpu else f"narenas:{usable}")
    if _MUZZY_SETTING not in named:
        mine.append(f"{_MUZZY_SETTING}:0")
    if mine:
        os.environ["_RJEM_MALLOC_CONF"] = ",".join([conf, *mine] if conf else mine)


def _small_pages_where_reported() -> None:
    """On a virtual machine whose balloon reports free pages to its host, tell numpy not to ask
    for transparent huge pages (``NUMPY_MADVISE_HUGEPAGE=0``), unless the user's environment
    says; set before numpy loads, which reads it.

    Why: the host takes back the free blocks of huge-page size, so numpy's huge pages come from
    memory the host must fault in again, ~20× slower to make than 4 KiB pages from memory just
    freed (``benchmarks/machine.py``). A 3M-event import, whose conversion makes large numpy
    arrays, took 0.84× the wall time without them there; elsewhere numpy's default stands."""
    if not sys.platform.startswith("linux") or "numpy" in sys.modules:
        return
    if "NUMPY_MADVISE_HUGEPAGE" in os.environ:
        return
    from profui.capture.conversion.free_pages import reports_free_pages

    if reports_free_pages():
        os.environ["NUMPY_MADVISE_HUGEPAGE"] = "0"


def _usage(exc: typer.TyperException) -> None:
    """A command line Typer refused (an unknown option, a value of the wrong type, a missing
    argument): one line naming the command and the problem, exit 2, instead of a usage box."""
    from typer._click.exceptions import NoArgsIsHelpError, UsageError

    if isinstance(exc, NoArgsIsHelpError):
        exc.show()  # the help itself, on stderr
        raise SystemExit(exc.exit_code)
    ctx = getattr(exc, "ctx", None)
    # click's parser refuses an option without its value before a context is made: the command
    # line's first command name says whose it was
    named = next((a for a in sys.argv[1:] if a in {c.name for c in app.registered_commands}), None)
    where = ctx.command_path if ctx is not None else f"profui {named}" if named else "profui"
    message = " ".join(exc.format_message().split()).rstrip(".")
    if isinstance(exc, UsageError):
        message = f"{message[:1].lower()}{message[1:]} (see {where} -h)"
    sys.stderr.write(f"{where}: {message}\n")
    raise SystemExit(getattr(exc, "exit_code", EXIT_BAD_INPUT))


def _bug() -> None:
    """Show the traceback of a failure that is profui's, not the input's, and ask for a report."""
    import traceback

    traceback.print_exc()
    report(
        "internal error (traceback above): a bug in profui, please report it with the command you ran", code=1
    )


def _shown(path: object) -> str:
    text = os.fsdecode(path) if isinstance(path, (str, bytes, os.PathLike)) else str(path)
    return text if len(text) <= 120 else f"{text[:60]}…{text[-40:]}"
