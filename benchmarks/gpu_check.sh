#!/usr/bin/env bash
# A real CUDA capture, for a machine with NVIDIA GPUs (never run on CPU-only machines).
#
#   benchmarks/gpu_check.sh            # PY=... to pick the interpreter (default .venv/bin/python, else python3)
#
# 1. writes a small CUDA training script (MLP + conv, AMP bf16, user annotations, real optimizer),
# 2. runs it under profcap (steps 5-7 traced, NVML sampled at 10 Hz); with 2+ GPUs visible it runs
#    2 ranks with torchrun and NCCL (DDP) instead,
# 3. checks the trace (status completed, GPUs in the manifest, kernels and memcpy in the events,
#    GPU metrics sampled, every rank present), runs `profui summary` (text and --json) on it,
# 4. copies the small trace to samples/gpu_capture/ (node folder renamed to gpu-host) as the
#    project's real GPU capture;
# 5. where jax with a GPU backend is importable, records samples/train_jax.py on the GPU under
#    jax.profiler, imports it and checks XLA ops landed on a device (samples/jax_gpu/).
# Exits non-zero with a one-line reason when anything is missing.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
if [[ -z "${PY:-}" ]]; then
    if [[ -x .venv/bin/python ]]; then PY=.venv/bin/python; else PY=python3; fi
fi
fail() { echo "gpu_check: $*" >&2; exit 1; }

command -v nvidia-smi >/dev/null || fail "nvidia-smi not found: no NVIDIA driver here"
"$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" \
    || fail "torch in $PY has no CUDA (torch.cuda.is_available() is False)"
"$PY" -c "import profui.capture, profui.tui.cli" 2>/dev/null \
    || "$PY" -m pip install --no-deps -e . >/dev/null \
    || fail "profui is not importable from $PY (pip install -e . first)"
NGPU=$("$PY" -c "import torch; print(torch.cuda.device_count())")
echo "gpu_check: $NGPU GPU(s): $(nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c | xargs)"

WORK="$(mktemp -d -t profui-gpu-check-XXXXXX)"
trap 'rm -rf "$WORK"' EXIT
cat > "$WORK/train_cuda.py" <<'PYEOF'
import os

import torch
import torch.nn as nn

from profui.capture import annotate

distributed = "RANK" in os.environ
if distributed:
    import torch.distributed as dist

    dist.init_process_group("nccl")
    local = int(os.environ["LOCAL_RANK"])
else:
    local = 0
torch.cuda.set_device(local)
dev = torch.device("cuda", local)
torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                  nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(4))
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(64 * 16, 512), nn.ReLU(), nn.Linear(512, 10))

    def forward(self, x):
        return self.head(self.conv(x))


model = Net().to(dev)
if distributed:
    model = nn.parallel.DistributedDataParallel(model, device_ids=[local])
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
host_x = torch.randn(64, 3, 32, 32).pin_memory()
host_y = torch.randint(0, 10, (64,)).pin_memory()
for step in range(12):
    with annotate("h2d"):
        x = host_x.to(dev, non_blocking=True)
        y = host_y.to(dev, non_blocking=True)
    with annotate("forward"), torch.autocast("cuda", dtype=torch.bfloat16):
        loss = nn.functional.cross_entropy(model(x), y)
    with annotate("backward"):
        opt.zero_grad(set_to_none=True)
        loss.backward()
    opt.step()
    if step % 4 == 0:
        print(f"step {step} loss {loss.item():.3f}", flush=True)  # a real device-to-host sync
torch.cuda.synchronize()
if distributed:
    dist.destroy_process_group()
PYEOF

TRACE="$WORK/trace"
if [[ "$NGPU" -ge 2 ]]; then
    CMD=("$PY" -m torch.distributed.run --standalone --nproc-per-node 2 "$WORK/train_cuda.py")
    RANKS="[0, 1]"
else
    CMD=("$PY" "$WORK/train_cuda.py")
    RANKS="[0]"
fi
"$PY" -m profui.capture.profcap -o "$TRACE" --name gpu-check --node gpu-host --steps 5-7 --hz 10 -- "${CMD[@]}" \
    || fail "profcap exited $?"

"$PY" - "$TRACE" "$RANKS" <<'PYEOF' || fail "the trace is not what a CUDA run should give (see above)"
import json, sys
from collections import Counter
import pyarrow.parquet as pq
from profui.capture.format import open_trace_dir

trace, ranks = open_trace_dir(sys.argv[1]), json.loads(sys.argv[2])
m = trace.manifest
problems = []
if m.status != "completed":
    problems.append(f"status {m.status} (exit {m.exit_code})")
if not m.gpus:
    problems.append("no GPUs in the manifest (NVML not found?)")
if sorted({r for _, r in trace.ranks}) != ranks:
    problems.append(f"ranks {trace.ranks}, expected {ranks}")
kinds = Counter()
for f in trace.events:
    kinds.update(pq.read_table(f.path, columns=["kind"]).column("kind").to_pylist())
for kind in ("kernel", "memcpy", "runtime", "cpu_op", "step", "annotation"):
    if not kinds[kind]:
        problems.append(f"no {kind} events")
gpu_rows = Counter()
for f in trace.metrics:
    t = pq.read_table(f.path, columns=["source", "metric"]).to_pylist()
    gpu_rows.update(r["metric"] for r in t if r["source"] == "gpu")
if not gpu_rows["util_pct"]:
    problems.append("no GPU utilisation samples")
print("gpu_check: events", dict(kinds))
print("gpu_check: gpu metrics", dict(gpu_rows))
print("gpu_check: notes", m.notes)
if problems:
    print("gpu_check: " + "; ".join(problems), file=sys.stderr)
    sys.exit(1)
PYEOF

profui() { "$PY" -c "import sys; from profui.tui.cli import main; sys.argv[0] = 'profui'; main()" "$@"; }
profui summary "$TRACE" || fail "profui summary failed"
profui summary "$TRACE" --json > "$WORK/summary.json" || fail "profui summary --json failed"
"$PY" -c "import json,sys; json.load(open(sys.argv[1]))" "$WORK/summary.json" || fail "summary --json is not JSON"

rm -rf samples/gpu_capture
mkdir -p samples
rm -rf "$TRACE/.profui"
cp -r "$TRACE" samples/gpu_capture
cp "$WORK/train_cuda.py" samples/gpu_capture/train_cuda.py.txt
du -sh samples/gpu_capture
echo "gpu_check: ok: samples/gpu_capture ($NGPU GPU(s), ranks $RANKS)"

if "$PY" -c "import jax, sys; sys.exit(0 if jax.default_backend() == 'gpu' else 1)" 2>/dev/null; then
    "$PY" samples/train_jax.py "$WORK/jaxlogs" --steps 5 || fail "the JAX training loop failed on the GPU"
    profui import "$WORK/jaxlogs" -o "$WORK/jax_trace" || fail "profui import of the JAX GPU trace failed"
    profui summary "$WORK/jax_trace" | head -20
    "$PY" - "$WORK/jax_trace" <<'PYEOF' || fail "the JAX GPU trace has no XLA ops on a device"
import sys
import pyarrow.parquet as pq
from profui.capture.format import open_trace_dir
rows = [r for f in open_trace_dir(sys.argv[1]).events for r in pq.read_table(f.path, columns=["kind", "device"]).to_pylist()]
sys.exit(0 if any(r["kind"] == "kernel" and r["device"] >= 0 for r in rows) else 1)
PYEOF
    rm -rf samples/jax_gpu && mkdir -p samples/jax_gpu && cp -r "$WORK/jaxlogs/plugins" samples/jax_gpu/
    find samples/jax_gpu -name '*.xplane.pb' -delete
    echo "gpu_check: ok: samples/jax_gpu (JAX on the GPU)"
else
    echo "gpu_check: jax with a GPU backend is not installed here: no JAX GPU trace recorded"
fi
