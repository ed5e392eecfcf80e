#!/usr/bin/env bash
# The GPU checks in one go, on a machine with CUDA, in under 8 minutes: the CUDA test subset, the SVGP-vs-GPyTorch
# benchmark, the page-speed benchmark, and the invariant (S scaling) and convolutional (rectangles) benchmarks.
# Each prints one JSON line on stdout: the benchmark's own last line, or {"check": NAME, "ok": false, ...} saying why
# it did not run. Progress and logs go to stderr and to $GPU_LOGS (default /tmp/invlab-gpu).
#
#   bash benchmarks/gpu/run.sh            # from the repository root (python3 must import torch with CUDA)
#
# Python packages the machine lacks (param, panel, ... for the page) may be put as wheels in .whl/ beside the
# repository's files; they are installed into /tmp/site first. Without CUDA the script says so and stops (exit 1).
set -u
cd "$(dirname "$0")/../.." || exit 1
PY=${PYTHON:-python3}
LOGS=${GPU_LOGS:-/tmp/invlab-gpu}
mkdir -p "$LOGS"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 INVLAB_DATA="$LOGS/data"
if compgen -G ".whl/*.whl" >/dev/null; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    >&2 && export PYTHONPATH="$PYTHONPATH:/tmp/site"
fi

if ! "$PY" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  echo '{"check": "cuda", "ok": false, "reason": "torch.cuda.is_available() is False here: nothing was run"}'
  exit 1
fi
"$PY" -c 'import json, torch; print(json.dumps({"check": "cuda", "ok": True, "device": torch.cuda.get_device_name(0),
"torch": torch.__version__}))'

# one check: NAME SECONDS COMMAND...; prints the command's last line if it is JSON, else why not
check() {
  local name=$1 limit=$2
  shift 2
  echo "== $name: $*" >&2
  timeout "$limit" "$@" >"$LOGS/$name.out" 2>"$LOGS/$name.err"
  local rc=$?
  "$PY" - "$name" "$rc" "$LOGS/$name.out" "$LOGS/$name.err" <<'PYEOF'
import json, sys
name, rc, out, err = sys.argv[1], int(sys.argv[2]), open(sys.argv[3]).read(), open(sys.argv[4]).read()
lines = [line for line in out.splitlines() if line.strip()]
try:
    result = json.loads(lines[-1])
    assert isinstance(result, dict)
    print(json.dumps({"check": name, "ok": rc == 0, **result}))
except (IndexError, ValueError, AssertionError):
    print(json.dumps({"check": name, "ok": False, "exit": rc, "timed_out": rc == 124,
                      "tail": (err or out)[-600:]}))
PYEOF
}

# the engine's tests on CUDA (float32, the default there): kernels, covariances, inducing, likelihoods, transforms,
# models and the trainer; the summary line becomes JSON
cuda_tests() {
  "$PY" -m pytest -q -p no:cacheprovider --device cuda tests/kernels tests/covariances tests/inducing \
    tests/likelihoods tests/transforms tests/models tests/train/test_trainer.py >"$LOGS/pytest.log" 2>&1
  local rc=$?
  "$PY" - "$rc" "$LOGS/pytest.log" <<'PYEOF'
import json, re, sys
text = open(sys.argv[2]).read()
counts = {word: int(n) for n, word in re.findall(r"(\d+) (passed|failed|skipped|errors?)", text.splitlines()[-1])}
print(json.dumps({"benchmark": "cuda_tests", "exit": int(sys.argv[1]), **counts}))
PYEOF
  return "$rc"
}

check cuda_tests 200 cuda_tests
check svgp_vs_gpytorch 90 "$PY" -m benchmarks.svgp.vs_gpytorch --quick --device cuda
check page_speed 120 "$PY" -m benchmarks.dashboard.page_speed --quick
check invariant_scaling 60 "$PY" -m benchmarks.invariant.scaling --quick
check convolutional_rectangles 60 "$PY" -m benchmarks.convolutional.rectangles --quick
