"""What `invlab.train.watch` costs a training loop you wrote: the same hand-written Adam loop with and without it.

Problem: the default SVGP (`RunConfig()`: the `svgp` family's defaults on sklearn's bundled `digits`, float64 on the
CPU, float32 with `--device cuda`), built from its config as a user's own loop builds it, trained by a hand-written
Adam loop (learning rate 0.01, minibatches of 256 drawn by a seeded generator) for `--steps` steps (1,000).

Arm "bare": the loop alone. Arm "watched": the same loop inside `with watch(model, name=..., config=..., data=...)`
writing a run store in a temporary data directory, calling `run.log(step, loss=..., elbo=..., kl=...)` with the
step's tensors every step (each a host sync: the values must be read to be stored) and `run.snapshot()` (the model's
diagnostics views: K_uu spectrum, inducing inputs, hyper-parameters) every 100 steps. Each arm keeps one model across
repetitions; within a repetition the two loops run in turns of 50 steps (bare, watched, bare, ...), so both see the
same load on a shared machine, and each arm's time is the wall clock summed over its turns, creating the run and
leaving the block included. `ratio` is the median over repetitions of watched time ÷ the
bare time measured just before, `overhead_percent` = 100 (ratio − 1); the target is under 5 %.

Run `python -m benchmarks.watch.overhead [--quick] [--steps N] [--repeats R] [--device cpu|cuda]`. The last line
printed is one JSON object.
"""
from __future__ import annotations

import statistics
import tempfile
import time

from ..common import arguments, emit, log, parse

SNAPSHOT_EVERY = 100
CHUNK = 50  # steps timed in turn, bare then watched, so both arms see the same load
TARGET_PERCENT = 5.0


def build(device: str):
    """(model, X, y, config, data, generator): the default SVGP and its data on `device`."""
    import torch

    from invlab.models.base import DataInfo
    from invlab.train import RunConfig

    config = RunConfig(train={"device": device})
    data = config.data_config().load()
    dtype = torch.float32 if device == "cuda" else torch.float64
    X = torch.as_tensor(data.X_train, dtype=torch.float64)
    y = torch.as_tensor(data.y_train)
    model = config.model_spec().build(config.model_params(), X, y, DataInfo.of(data),
                                      generator=torch.Generator().manual_seed(0))
    model = model.to(device=device, dtype=dtype)
    return model, X.to(device, dtype), y.to(device), config, data, torch.Generator().manual_seed(1)


def loop(model, X, y, generator, steps: int, optimizer, run=None, start: int = 0) -> None:
    """`steps` Adam steps on minibatches of 256; with `run`, each logged and a snapshot every SNAPSHOT_EVERY."""
    import torch

    for step in range(start + 1, start + steps + 1):
        idx = torch.randint(len(X), (256,), generator=generator).to(X.device)
        optimizer.zero_grad(set_to_none=True)
        terms = model.loss((X[idx], y[idx]))
        terms.loss.backward()
        optimizer.step()
        if run is not None:
            run.log(step, loss=terms.loss, elbo=terms.parts["elbo"], kl=terms.parts["kl"])
            if step % SNAPSHOT_EVERY == 0:
                run.snapshot()
    if X.device.type == "cuda":
        torch.cuda.synchronize()


def log_reps(times: dict[str, list[float]], steps: int) -> None:
    """One line per repetition: both arms' seconds for `steps` steps."""
    for rep, (bare, watched) in enumerate(zip(times["bare"], times["watched"]), 1):
        log(f"repetition {rep}: bare {bare:.2f} s, watched {watched:.2f} s for {steps} steps")


def main(argv=None) -> dict:
    parser = arguments(__doc__, quick="100 steps, 1 repetition (a smoke test: the ratio is noisy)")
    parser.add_argument("--steps", type=int, default=1000, help="steps per loop (default: %(default)s)")
    parser.add_argument("--repeats", type=int, default=5, help="interleaved repetitions (default: %(default)s)")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="where the loop runs")
    args = parse(parser, argv)
    steps, repeats = (10, 1) if args.smoke else (100, 1) if args.quick else (args.steps, args.repeats)
    import os

    import torch

    from invlab.train import watch

    load_before = os.getloadavg()[0]
    arms = {name: build(args.device) for name in ("bare", "watched")}
    optimizers = {name: torch.optim.Adam(arm[0].parameters(), lr=0.01) for name, arm in arms.items()}
    times: dict[str, list[float]] = {"bare": [], "watched": []}
    done = {"bare": 0, "watched": 0}
    with tempfile.TemporaryDirectory() as data_dir:
        for name in ("bare", "watched"):  # one untimed warm-up step each (first-call allocations)
            model, X, y, config, data, generator = arms[name]
            loop(model, X, y, generator, 1, optimizers[name])
        for rep in range(repeats):
            watched = arms["watched"]
            start = time.perf_counter()
            run = watch(watched[0], name=f"overhead-{rep}", config=watched[3], data=watched[4], data_dir=data_dir)
            spent = {"bare": 0.0, "watched": time.perf_counter() - start}
            for chunk in range(0, steps, CHUNK):
                n = min(CHUNK, steps - chunk)
                for name in ("bare", "watched"):  # interleaved by chunks: both see the same load
                    model, X, y, config, data, generator = arms[name]
                    start = time.perf_counter()
                    loop(model, X, y, generator, n, optimizers[name], run=run if name == "watched" else None,
                         start=done[name])
                    spent[name] += time.perf_counter() - start
                    done[name] += n
            start = time.perf_counter()
            run.__exit__(None, None, None)  # leaving the block: the run marked finished, the queue written
            spent["watched"] += time.perf_counter() - start
            for name in times:
                times[name].append(spent[name])
    log_reps(times, steps)
    ratios = [w / b for b, w in zip(times["bare"], times["watched"])]
    ratio = statistics.median(ratios)
    steps_per_s = {name: steps / statistics.median(t) for name, t in times.items()}
    log(f"watch costs {100 * (ratio - 1):.1f} % of a {steps}-step loop (ratio {ratio:.3f}; target under "
        f"{TARGET_PERCENT:g} %): {steps_per_s['bare']:.1f} steps/s bare, {steps_per_s['watched']:.1f} watched")
    return emit({"benchmark": "benchmarks.watch.overhead", "device": args.device, "steps": steps, "repeats": repeats,
                 "ratio": round(ratio, 4), "overhead_percent": round(100 * (ratio - 1), 2),
                 "target_percent": TARGET_PERCENT, "ratios": [round(r, 4) for r in ratios],
                 "steps_per_s": {k: round(v, 2) for k, v in steps_per_s.items()},
                 "seconds": {k: [round(s, 3) for s in v] for k, v in times.items()}}, load_before=load_before)


if __name__ == "__main__":
    main()
