"""Profile ``samples/train_mlp.py`` with torch.profiler and import the result as ``samples/mlp_cpu``.

    python samples/make_mlp_sample.py            # rewrites samples/mlp_cpu/ (the Kineto JSON is temporary)

The profiler records CPU ops with input shapes (``record_shapes=True``), the script's
``record_function`` annotations and one ``ProfilerStep#N`` per training step (wait 2, warmup 1,
active 4). The trace is imported with ``profui.capture.ingest.import_trace`` under the node name
``sample-host`` so the committed sample does not carry the machine's host name.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile, schedule

from profui.capture.ingest import import_trace

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from train_mlp import train  # noqa: E402

WAIT, WARMUP, ACTIVE = 2, 1, 4


def record(json_path: Path, seed: int = 0) -> list[float]:
    """Run the training loop under torch.profiler and export the Chrome trace to ``json_path``."""
    torch.set_num_threads(1)
    with profile(
        activities=[ProfilerActivity.CPU],
        schedule=schedule(wait=WAIT, warmup=WARMUP, active=ACTIVE, repeat=1),
        record_shapes=True,
        profile_memory=True,
        with_stack=True,
        on_trace_ready=lambda prof: prof.export_chrome_trace(str(json_path)),
    ) as prof:
        return train(steps=WAIT + WARMUP + ACTIVE + 1, seed=seed, on_step=lambda _s, _l: prof.step())


def make_sample(out: Path, seed: int = 0) -> Path:
    """Record a fresh profile of the MLP and import it as the trace ``out`` (replaced)."""
    with tempfile.TemporaryDirectory() as tmp:
        json_path = Path(tmp) / "mlp_cpu.json"
        record(json_path, seed=seed)
        import_trace([json_path], out, node="sample-host", rank=0, force=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--out", type=Path, default=HERE / "mlp_cpu")
    args = ap.parse_args()
    out = make_sample(args.out)
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    print(f"wrote {out} ({size / 1024:.0f} KiB)")


if __name__ == "__main__":
    main()
