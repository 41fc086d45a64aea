"""A small real CPU training loop: a 3-layer MLP learning a noisy synthetic regression.

Run it on its own (``python samples/train_mlp.py --steps 50``) or under a profiler
(``profcap -- python samples/train_mlp.py``); ``samples/make_mlp_sample.py`` profiles it with
torch.profiler to make the bundled ``samples/mlp_cpu`` trace. Seeded, so runs are repeatable.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import torch
from torch import nn
from torch.profiler import record_function


def make_data(n: int = 2048, features: int = 32, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs and targets of a fixed random linear map plus noise."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, features, generator=gen)
    w = torch.randn(features, 1, generator=gen)
    y = torch.tanh(x @ w) + 0.05 * torch.randn(n, 1, generator=gen)
    return x, y


def make_model(features: int = 32, hidden: int = 64) -> nn.Module:
    """The MLP being trained."""
    return nn.Sequential(
        nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 1)
    )


def train(
    steps: int = 20,
    batch: int = 64,
    seed: int = 0,
    on_step: Callable[[int, float], None] | None = None,
) -> list[float]:
    """Train for ``steps`` optimizer steps; ``on_step(step, loss)`` after each. Returns the losses."""
    torch.manual_seed(seed)
    x, y = make_data(seed=seed)
    model = make_model(x.shape[1])
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loss_fn = nn.MSELoss()
    losses = []
    for step in range(steps):
        with record_function("data_loading"):
            idx = torch.randint(0, x.shape[0], (batch,))
            xb, yb = x[idx], y[idx]
        with record_function("forward_backward"):
            loss = loss_fn(model(xb), yb)
            opt.zero_grad(set_to_none=True)
            loss.backward()
        opt.step()
        losses.append(loss.item())
        if on_step is not None:
            on_step(step, losses[-1])
    return losses


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--batch", type=int, default=64)
    args = ap.parse_args()
    losses = train(args.steps, args.batch)
    print(f"trained {len(losses)} steps: loss {losses[0]:.4f} -> {losses[-1]:.4f}")


if __name__ == "__main__":
    main()
