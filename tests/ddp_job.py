"""A 2-rank gloo DDP training job on CPU (a linear layer, 8 steps, each step's forward and
backward in a ``fwd_bwd`` annotation), run under torchrun by the tests that record one."""

DDP_JOB = r"""
import os
import torch
import torch.distributed as dist
from profui.capture import annotate

dist.init_process_group("gloo")
torch.manual_seed(dist.get_rank())
torch.set_num_threads(1)
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(32, 8))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for i in range(8):
    x, y = torch.randn(16, 32), torch.randn(16, 8)
    with annotate("fwd_bwd"):
        loss = ((model(x) - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
    opt.step()
dist.destroy_process_group()
# torch 2.13 CPU + gloo aborts now and then in its exit-time destructors ("terminate called
# without an active exception"), with or without any profiler; skip them: the trace is written.
os._exit(0)
"""
