# Set-up and the two everyday commands: `make run` (the dashboard on digits) and `make test` (lint, then the tests).
# The environment lives in .venv. torch is installed as torch==2.13.0 unless the Python that builds
# the venv can already import a torch, in which case the venv sees that one (system site packages).

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: setup run train lint test bench lab docs docs-fast clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	@if [ ! -x $(BIN)/python ]; then \
	  if $(PYTHON) -c "import torch" 2>/dev/null; then \
	    echo "using the torch that $(PYTHON) already has"; $(PYTHON) -m venv --system-site-packages $(VENV); \
	  else $(PYTHON) -m venv $(VENV); fi; fi
	@$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/pip install --quiet "torch==2.13.0"
	$(BIN)/pip install --quiet -e ".[dashboard,lab,sweeps,test,bench,gpytorch,data,docs]"
	@touch $(STAMP)

run: setup
	$(BIN)/invlab serve

train: setup
	$(BIN)/invlab train --model svgp --dataset digits --steps 1000

lint: setup
	$(BIN)/ruff check .

# Two test processes (pytest-xdist), each taking whole test files: a browser test mostly waits on its page and
# server, so the other process runs the engine's tests beside it.
test: setup lint
	$(BIN)/python -m pytest -q -n 2 --dist loadfile --no-loadscope-reorder --nbmake tests notebooks

# JupyterLab on the teaching notebooks, with this venv's Python as the kernel.
lab: setup
	$(BIN)/jupyter lab --notebook-dir=notebooks --ServerApp.ip=127.0.0.1

# The documentation site under docs/_build/html, warnings as errors: the notebooks run (cached until they change);
# docs-fast shows them as stored, without running them.
docs: setup
	PYTHONPATH=. $(BIN)/python -m sphinx -W --keep-going -b html docs docs/_build/html

docs-fast: setup
	INVLAB_DOCS_FAST=1 PYTHONPATH=. $(BIN)/python -m sphinx -W --keep-going -b html docs docs/_build/html

bench: setup
	$(BIN)/python -m benchmarks.svgp.vs_gpytorch --quick

clean:
	rm -rf $(VENV) build *.egg-info docs/_build docs/_generated
