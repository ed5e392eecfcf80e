"""Loading a large CSV: `invlab.data.load("csv:PATH")` against pandas and NumPy reading the same file.

A file of 10⁶ rows × 20 columns (19 inputs and a regression target; `--quick`: 10⁵ rows) is written to a temporary
folder, then each way of reading it runs in a fresh process, interleaved over `--repeats` rounds: `invlab` (the
whole `load`: read, split, standardise, checks — the Dataset a run trains on), `invlab_read` (the CSV reader alone),
`pandas` (`pd.read_csv(...).to_numpy()`) and `numpy` (`np.loadtxt`). Each reports its wall-clock seconds and its
peak memory above what the process held before reading (peak resident set size, Linux), relative to the size of the
array, N × 20 × 8 bytes. Targets for the full size: `invlab` under 5 s and under 3× the array's size.
"""
from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

from benchmarks.common import arguments, emit, log

COLUMNS = 20
METHODS = ("invlab", "invlab_read", "pandas", "numpy")


def write_file(path: str, rows: int, seed: int = 0) -> None:
    """rows × COLUMNS random numbers with a header, the last column a linear function of the others plus noise."""
    import numpy as np

    rng = np.random.default_rng(seed)
    header = ",".join([f"x{i}" for i in range(COLUMNS - 1)] + ["y"])
    with open(path, "w") as f:
        f.write(header + "\n")
        for start in range(0, rows, 100_000):
            X = rng.normal(size=(min(100_000, rows - start), COLUMNS - 1))
            y = X @ np.linspace(-1, 1, COLUMNS - 1) + 0.1 * rng.normal(size=len(X))
            np.savetxt(f, np.column_stack([X, y]), delimiter=",", fmt="%.6f")


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def worker(method: str, path: str) -> dict:
    """Read `path` one way in this (fresh) process: seconds, and peak bytes above the resident set before."""
    import numpy as np  # noqa: F401  (imported before the baseline, like the others' libraries)
    import pandas as pd

    from invlab.data import load
    from invlab.data.files import read_csv

    before = _rss_bytes()
    start = time.perf_counter()
    if method == "invlab":
        data = load(f"csv:{path}")
        shape = (data.num_train + data.num_test, data.input_dim + 1)
    elif method == "invlab_read":
        raw = read_csv(path, {}, [])
        shape = (len(raw.X_train), raw.X_train.shape[1] + 1)
    elif method == "pandas":
        shape = pd.read_csv(path).to_numpy(dtype=np.float64).shape
    else:
        shape = np.loadtxt(path, delimiter=",", skiprows=1).shape
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # kB on Linux
    return {"seconds": seconds, "peak_bytes": max(peak - before, 0), "shape": list(shape)}


def main(argv=None) -> dict:
    parser = arguments(__doc__, quick="10⁵ rows instead of 10⁶", threads=False)
    parser.add_argument("--rows", type=int, default=None, help="rows of the file (default 10⁶; --quick: 10⁵)")
    parser.add_argument("--repeats", type=int, default=3, help="rounds, each method once per round (default 3)")
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    args = parser.parse_args(argv)
    if args.smoke:
        args.repeats = 1
    rows = args.rows or (2_000 if args.smoke else 100_000 if args.quick else 1_000_000)
    load_before = os.getloadavg()[0]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.getcwd(), os.environ.get("PYTHONPATH", "")]))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "big.csv")
        t0 = time.perf_counter()
        write_file(path, rows)
        log(f"wrote {rows:,} rows × {COLUMNS} columns ({os.path.getsize(path) / 2**20:.0f} MB) in "
            f"{time.perf_counter() - t0:.1f} s")
        results: dict[str, list[dict]] = {m: [] for m in args.methods}
        for r in range(args.repeats):
            for method in args.methods:
                out = subprocess.run([sys.executable, "-m", "benchmarks.data.csv_load", "--worker", method, path],
                                     capture_output=True, text=True, env=env, check=False)
                if out.returncode != 0:
                    raise SystemExit(f"{method} failed: {out.stderr.strip().splitlines()[-1:]}")
                result = json.loads(out.stdout.strip().splitlines()[-1])
                results[method].append(result)
                log(f"round {r + 1}: {method:12s} {result['seconds']:6.2f} s, peak "
                    f"{result['peak_bytes'] / 2**20:7.0f} MB")
    array_bytes = rows * COLUMNS * 8
    summary = {}
    for method, runs in results.items():
        seconds = statistics.median(x["seconds"] for x in runs)
        peak = statistics.median(x["peak_bytes"] for x in runs)
        summary[method] = {"seconds": round(seconds, 3), "peak_mb": round(peak / 2**20, 1),
                           "peak_over_array": round(peak / array_bytes, 2)}
    out = {"rows": rows, "columns": COLUMNS, "array_mb": round(array_bytes / 2**20, 1), "methods": summary}
    if "invlab" in summary and "pandas" in summary:
        out["time_ratio_invlab_over_pandas"] = round(summary["invlab"]["seconds"] / summary["pandas"]["seconds"], 3)
    if "invlab" in summary and "numpy" in summary:
        out["time_ratio_invlab_over_numpy"] = round(summary["invlab"]["seconds"] / summary["numpy"]["seconds"], 3)
    if "invlab" in summary:
        out["meets_targets"] = summary["invlab"]["seconds"] < 5 and summary["invlab"]["peak_over_array"] < 3
    return emit(out, load_before=load_before)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--worker":
        print(json.dumps(worker(sys.argv[2], sys.argv[3])))
    else:
        main()
