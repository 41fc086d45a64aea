"""A small jitted JAX training loop (a 2-layer MLP, SGD) profiled with ``jax.profiler``.

    python samples/train_jax.py LOGDIR [--steps 5]

writes ``LOGDIR/plugins/profile/<run>/<host>.trace.json.gz`` (and the same events as
``perfetto_trace.json.gz``). Each step is a ``StepTraceAnnotation("train", step_num=i)`` holding
a ``TraceAnnotation("forward_backward")`` (the user's own range) and a ``TraceAnnotation
("sync")`` around ``block_until_ready``. Used by ``tests/capture/test_jax_import.py``; ``samples/jax_cpu/`` is one run of it
(``--steps 5``, CPU, jax 0.10.2), its ``<host>.trace.json.gz`` renamed ``sample-host.trace.json.gz``
(the ``.xplane.pb`` and ``perfetto_trace.json.gz`` dropped): ``profui import samples/jax_cpu -o t``.
"""

from __future__ import annotations

import argparse

import jax
import jax.numpy as jnp


def loss(w, x, y):
    return jnp.mean((jnp.tanh(x @ w[0]) @ w[1] - y) ** 2)


@jax.jit
def step(w, x, y):
    grads = jax.grad(loss)(w, x, y)
    return [wi - 0.01 * gi for wi, gi in zip(w, grads, strict=True)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("logdir")
    ap.add_argument("--steps", type=int, default=5)
    args = ap.parse_args()
    key = jax.random.PRNGKey(0)
    k1, k2, k3 = jax.random.split(key, 3)
    w = [jax.random.normal(k1, (64, 128)), jax.random.normal(k2, (128, 1))]
    x, y = jax.random.normal(k3, (256, 64)), jnp.ones((256, 1))
    w = jax.block_until_ready(step(w, x, y))  # compile outside the profile
    with jax.profiler.trace(args.logdir, create_perfetto_trace=True):
        for i in range(args.steps):
            with jax.profiler.StepTraceAnnotation("train", step_num=i):
                with jax.profiler.TraceAnnotation("forward_backward"):
                    w = step(w, x, y)
                with jax.profiler.TraceAnnotation("sync"):
                    jax.block_until_ready(w)


if __name__ == "__main__":
    main()
