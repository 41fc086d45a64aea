"""Which Polars engine analysis runs its queries on (``lf.collect(engine=ENGINE)``).

A trace's events sit in memory once read (:meth:`profui.analysis.Trace.cached_events`) and the
queries over them are many small joins, sorts and group-bys; Polars' in-memory engine runs
those 20-50% faster than the streaming engine Polars 2 picks by default (``profui summary`` of
the 54 MB df_index trace: 0.51 -> 0.41 s). Results are identical either way.
"""

from __future__ import annotations

#: The engine analysis passes to ``LazyFrame.collect``.
ENGINE = "in-memory"
