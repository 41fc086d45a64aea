"""How long a top-N table is: the rows every surface keeps by default (the pipeline's ``top_n``
parameter, ``profui summary --top``, ``profui diff --top``, the MCP tools) and the name of the
row :func:`profui.analysis.kernels.top_kernels` folds the rest into.

No imports: the command line's option defaults and the dashboard's warm open read it without
loading Polars.
"""

from __future__ import annotations

#: Rows of a top-N table unless asked otherwise.
TOP_N = 15

#: The row of a top-N table that holds every kernel after the first N (counts and times summed).
OTHER = "(other)"
