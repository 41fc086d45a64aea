"""Which Polars engine analysis runs its queries on (``lf.collect(engine=ENGINE)``).

A trace's events sit in memory once read (:meth:`profui.analysis.Trace.cached_events`) and the
queries over them are many small joins, sorts and group-bys; Polars' in-memory engine runs
those 20-50% faster than the streaming engine Polars 2 picks by default (``profui summary`` of
the 54 MB df_index trace: 0.51 -> 0.41 s). Results are identical either way.
"""

from __future__ import annotations

from typing import Final

#: The engine analysis passes to ``LazyFrame.collect``.
ENGINE: Final = "in-memory"

#: The engine of an aggregation over every event of a trace (the inventory, the overview, each
#: rank's window): there the streaming engine wins, and by far as the trace grows — on 3M events
#: (df_index ×20) the inventory's group-by takes 0.1 s and 4 MB more, against 0.3 s and 360 MB
#: on the in-memory engine, which builds its hash tables over the whole frame at once. Also of a
#: filter of every event by a test of its text (its args) and what is read from the rows kept:
#: the streaming engine runs it on every core, in the events' order; the in-memory engine on one.
SCAN_ENGINE: Final = "streaming"
