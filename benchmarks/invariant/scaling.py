"""Training-step time of the invariant GP against the number of augmented samples S (M and minibatch fixed).

The estimators are linear in S except k̂_f, which pairs the samples of each input ([N, S, S] kernel blocks),
so the step time should grow close to linearly: the target is t(S=32) / t(S=8) ≤ 4.4. Measured side by side
in one process, on the CPU and on the GPU when one is present (float32 there), with augmented images per second.

    python -m benchmarks.invariant.scaling [--quick]

Uses the generated 28×28 `rectangles` images (no download). Last line: one JSON object with `ratio_s32_s8`
(the CPU's, or the GPU's when present) and the per-S times.
"""
from __future__ import annotations

import statistics
import time

import torch

from invlab.train import RunConfig, Trainer

from ..common import arguments, emit, parse


def make_trainer(S: int, device: str, args) -> Trainer:
    config = RunConfig(model="invariant",
                       data={"dataset": "rectangles", "source_options": {"num_train": 600, "num_test": 50}},
                       model_config={"augmentation": "rotation", "num_inducing": args.num_inducing, "num_samples": S,
                                     "likelihood": "gaussian", "init_rotation": 30.0},
                       train={"steps": 10_000, "batch_size": args.batch_size, "device": device, "eval_every": 0,
                              "log_every": 10_000, "dtype": args.dtype})
    return Trainer(config)


def step_times(device: str, args, sizes=(8, 16, 32)) -> dict[int, float]:
    """Median seconds per training step for each S, the sizes interleaved step by step so that a change in
    the machine's load hits all of them alike."""
    trainers = {S: make_trainer(S, device, args) for S in sizes}
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    for trainer in trainers.values():
        for _ in range(args.warmup):
            trainer._step()
    times = {S: [] for S in sizes}
    for _ in range(args.repeats):
        for S, trainer in trainers.items():
            sync()
            t0 = time.perf_counter()
            trainer._step()
            sync()
            times[S].append(time.perf_counter() - t0)
    return {S: statistics.median(t) for S, t in times.items()}


def main(argv=None) -> dict:
    p = arguments(__doc__, quick="M = 50, minibatches of 32, 5 timed steps")
    p.add_argument("--num-inducing", type=int, default=200)
    p.add_argument("--batch-size", type=int, default=100)
    p.add_argument("--repeats", type=int, default=25)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--dtype", default="auto", choices=["auto", "float64", "float32"],
                   help="auto: float64 on the CPU, float32 on the GPU")
    args = parse(p, argv)
    if args.quick:
        args.num_inducing, args.batch_size, args.repeats, args.warmup = 50, 32, 1 if args.smoke else 5, 1
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    result = {"benchmark": "invariant_scaling", "num_inducing": args.num_inducing, "batch_size": args.batch_size,
              "threads": args.threads, "dtype": args.dtype}
    for device in devices:
        times = step_times(device, args)
        for S, t in times.items():
            print(f"{device}: S={S:2d}  {1000 * t:7.1f} ms/step  {args.batch_size * S / t:9.0f} augmented images/s")
        result[device] = {"seconds_per_step": {str(S): t for S, t in times.items()},
                          "augmented_images_per_second": {str(S): args.batch_size * S / t for S, t in times.items()},
                          "ratio_s32_s8": times[32] / times[8]}
    result["ratio_s32_s8"] = result[devices[-1]]["ratio_s32_s8"]
    result["target_met"] = result["ratio_s32_s8"] <= 4.4
    return emit(result)


if __name__ == "__main__":
    main()
