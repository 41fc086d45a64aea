"""The job's critical path as the findings read it: the slowest rank's path per step, the
what-if savings at job level, the time of some kinds on it, and its stretches named for where
to look (``critical_path``'s tables in, plain numbers and names out)."""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

#: Names shown under a finding's ``look_at``.
LOOK_AT = 5

#: A Python event's object address (``<built-in method ... at 0x7f...>``): differs per run.
ADDRESS = r" at 0x[0-9a-fA-F]+"

#: Host runtime and driver calls (CUDA runtime and driver API, HIP, HSA): their time is launch
#: overhead, so they are never where a compute finding says to look.
RUNTIME_CALL = r"^(?:cuda[A-Z]|cu[A-Z]|hip[A-Z]|hsa_)"


def job_paths(cp_steps: pl.DataFrame) -> pl.DataFrame:
    """Per analysed step, the slowest rank's critical path: ``step, node, rank, length_ns``
    (ties: the first node and rank)."""
    return (
        cp_steps.sort("step", pl.col("length_ns"), "node", "rank", descending=[False, True, False, False])
        .group_by("step", maintain_order=True)
        .first()
        .select("step", "node", "rank", "length_ns")
    )


def mean_length(jobs: pl.DataFrame) -> float:
    """The job's critical path per analysed step: the analysed steps' total length over their
    number (0 without steps). A mean saving over it is their total saving over their total
    length, so it cannot pass 1."""
    return float(jobs["length_ns"].sum()) / jobs.height if jobs.height else 0.0


def savings(cp_steps: pl.DataFrame, what_if: pl.DataFrame, changes: Sequence[str]) -> pl.DataFrame:
    """Per change and analysed step, the job's saving: the slowest rank's path length minus the
    slowest rank's length with the change (a rank without a replay of that change keeps its
    length). Columns ``change, step, saved_ns``."""
    after = (
        cp_steps.select("node", "rank", "step", "length_ns")
        .join(pl.DataFrame({"change": list(changes)}), how="cross")
        .join(
            what_if.select("node", "rank", "step", "change", pl.col("length_ns").alias("after_ns")),
            on=["node", "rank", "step", "change"],
            how="left",
        )
        .group_by("change", "step")
        .agg(pl.coalesce("after_ns", "length_ns").max().alias("after_ns"))
    )
    before = cp_steps.group_by("step").agg(pl.col("length_ns").max().alias("before_ns"))
    return after.join(before, on="step").select(
        "change", "step", (pl.col("before_ns") - pl.col("after_ns")).clip(lower_bound=0).alias("saved_ns")
    )


def path_time(jobs: pl.DataFrame, by_kind: pl.DataFrame, kinds: tuple[str, ...]) -> float:
    """Mean time per analysed step on the slowest rank's path of ``kinds``."""
    if not jobs.height:
        return 0.0
    t = by_kind.filter(pl.col("kind").is_in(list(kinds))).join(
        jobs.select("step", "node", "rank"), on=["step", "node", "rank"]
    )
    return float(t["ns"].sum()) / jobs.height


def stretches(events: pl.DataFrame) -> pl.DataFrame:
    """The path's stretches with ``dur_ns`` and a ``label``: the event's name, or for a gap
    ``after NAME`` (the last event before it on the same path), at the step's start ``step
    start, before NAME`` (the first event after it)."""
    keys = ["node", "rank", "step"]
    named = pl.when(pl.col("name") != "").then(pl.col("name"))
    prev = named.forward_fill().shift(1).over(keys, order_by="seq")
    following = named.backward_fill().shift(-1).over(keys, order_by="seq")
    return events.with_columns(
        (pl.col("end_ns") - pl.col("start_ns")).alias("dur_ns"),
        pl.when(pl.col("name") != "")
        .then(pl.col("name"))
        .otherwise(
            pl.concat_str(pl.lit("after "), prev).fill_null(
                pl.concat_str(pl.lit("step start, before "), following).fill_null("step start")
            )
        )
        .alias("label"),
        pl.col("kind").shift(1).over(keys, order_by="seq").alias("prev_kind"),
    )


def look_at(
    st: pl.DataFrame, kinds: tuple[str, ...], ops_only: bool = False, most: int = LOOK_AT
) -> list[str]:
    """The ``most`` names on the path for ``kinds`` with the most time, longest first, without Python
    objects' addresses (so they read, and repeat across runs). ``ops_only``: only the ops and
    kernels the time is in (no runtime or driver call, no gap between events)."""
    rows = st.filter(pl.col("kind").is_in(list(kinds)))
    if ops_only:
        rows = rows.filter(pl.col("name") != "", ~pl.col("name").str.contains(RUNTIME_CALL))
    top = (
        rows.with_columns(pl.col("label").str.replace_all(ADDRESS, ""))
        .group_by("label")
        .agg(pl.col("dur_ns").sum())
        .sort("dur_ns", "label", descending=[True, False])
        .head(most)
    )
    return top["label"].to_list()


def listed_kinds(st: pl.DataFrame, kinds: tuple[str, ...], labels: list[str]) -> set[str]:
    """The path kinds (of ``kinds``) of the names :func:`look_at` listed (``labels``): what the
    list holds, host ops, kernels or both."""
    rows = st.filter(
        pl.col("kind").is_in(list(kinds)), pl.col("label").str.replace_all(ADDRESS, "").is_in(labels)
    )
    return set(rows["kind"].unique().to_list())


def longest_start(st: pl.DataFrame, kinds: tuple[str, ...], rank: int, step: int) -> int | None:
    """The start of the longest stretch of ``kinds`` on ``rank``'s path in ``step``."""
    rows = st.filter(pl.col("kind").is_in(list(kinds)), pl.col("rank") == rank, pl.col("step") == step)
    if not rows.height:
        return None
    return int(rows.sort("dur_ns", "start_ns", descending=[True, False])["start_ns"][0])
