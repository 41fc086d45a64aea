"""Input-bound CPU training: the Dataset's ``__getitem__`` sleeps 2 ms per sample (batch 8,
``num_workers=0``), so each step waits ~16 ms for its batch. ``--no-cause``: no sleep. Its JSON
line's ``cause_ns``: each iteration's wait for its batch (the script's clock)."""

from __future__ import annotations

import time

import torch
from steploop import Clock, mlp, parse, report

SAMPLE_SLEEP_S = 0.002
BATCH = 8


class SleepyDataset(torch.utils.data.Dataset):
    """Random samples; reading one takes ``delay`` seconds (a slow disk or decode)."""

    def __init__(self, n: int, delay: float) -> None:
        self.x = torch.randn(n, 256)
        self.y = torch.randint(0, 10, (n,))
        self.delay = delay

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i: int):
        if self.delay:
            time.sleep(self.delay)
        return self.x[i], self.y[i]


def main() -> None:
    args = parse(__doc__)
    data = SleepyDataset(BATCH * args.steps, 0.0 if args.no_cause else SAMPLE_SLEEP_S)
    loader = iter(torch.utils.data.DataLoader(data, batch_size=BATCH, num_workers=0))
    model, opt = mlp(256, 1024, 1024)
    clock = Clock()
    fetch_ns = []
    for _ in range(args.steps):
        with clock:
            t0 = time.perf_counter_ns()
            x, y = next(loader)
            fetch_ns.append(time.perf_counter_ns() - t0)
            loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    report(clock, not args.no_cause, cause_ns=fetch_ns)


if __name__ == "__main__":
    main()
