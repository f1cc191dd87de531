# hazmat: `make demo` and `make test` set up everything they need (venv, Docker engine, images).
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
HAZMAT := $(VENV)/bin/hazmat
PYTEST_ARGS ?=

.PHONY: setup venv engine images demo test test-fresh cluster-test lint typecheck unit doctor clean

setup: venv engine images

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml scripts/ensure-venv.sh
	bash scripts/ensure-venv.sh $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -e '.[dev]'
	touch $@

engine:
	bash scripts/ensure-engine.sh

images: venv engine
	$(HAZMAT) images build --missing

demo: setup
	bash examples/demo.sh $(HAZMAT)

lint: venv
	$(VENV)/bin/ruff check src tests benchmarks scripts

typecheck: venv
	$(VENV)/bin/mypy

# Unit tests only: no Docker engine needed.
unit: venv
	$(VENV)/bin/pytest -m "not docker" $(PYTEST_ARGS)

test: setup lint typecheck
	$(VENV)/bin/pytest $(PYTEST_ARGS)

# What CI runs (.ci/run): a Docker engine of its own with nothing left over, the images built
# there (or loaded from the cache by recipe digest), `make test` and `make cluster-test`, the
# engine removed at the end. Run it before you push: the machine's own engine can hide a
# missing step.
test-fresh:
	bash .ci/run

# A real cluster on this machine (root): Redis, three Docker engines, a worker each, the
# service; 520 mixed runs with faults injected (scripts/cluster_test.py, docs/scale.md).
cluster-test: setup
	$(PY) scripts/cluster_test.py

doctor: venv engine
	$(HAZMAT) doctor

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
