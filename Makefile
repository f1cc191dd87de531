# hazmat: `make demo` and `make test` set up everything they need (venv, Docker engine, images).
SHELL := /bin/bash
VENV ?= .venv
# Semgrep pins the MCP SDK to 1.x, hazmat needs 2.x: Semgrep gets an environment of its own,
# and its command is linked into $(VENV)/bin, where hazmat looks first after HAZMAT_SEMGREP
# (assess/semgrep.py; docs/assessment.md, "Semgrep").
SEMGREP_VENV ?= $(VENV)-semgrep
SEMGREP := semgrep>=1.100,<2
PY := $(VENV)/bin/python
HAZMAT := $(VENV)/bin/hazmat
PYTEST_ARGS ?=
# `make test`'s workers (pytest-xdist), each given whole test files (module fixtures, such as
# a test's own images, are made once): the suite on the engine keeps one core of these
# machines busy, two keep both (the suite's time: .ci/run's phase table)
TEST_JOBS ?= 2

.PHONY: setup venv engine images browser demo test test-fresh check check-install cluster-test \
	lint typecheck unit doctor clean v2-test ts-client

setup: venv engine images

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml scripts/ensure-venv.sh $(SEMGREP_VENV)/.installed
	bash scripts/ensure-venv.sh $(VENV)
	@# a venv made before Semgrep moved out has it here, holding the MCP SDK at 1.x
	if $(VENV)/bin/pip show --quiet semgrep 2>/dev/null; then \
		$(VENV)/bin/pip uninstall --quiet --yes semgrep; fi
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -e '.[dev]'
	ln -sfn $(abspath $(SEMGREP_VENV))/bin/semgrep $(VENV)/bin/semgrep
	touch $@

$(SEMGREP_VENV)/.installed: scripts/ensure-venv.sh
	bash scripts/ensure-venv.sh $(SEMGREP_VENV)
	$(SEMGREP_VENV)/bin/pip install --quiet --disable-pip-version-check '$(SEMGREP)'
	touch $@

engine:
	bash scripts/ensure-engine.sh

# Where the default tier is the OCI tier (root, cgroups, both runtimes: `hazmat doctor`), the
# images' root file systems are exported here too, not on each image's first run.
images: venv engine
	$(HAZMAT) images build --missing
	$(HAZMAT) images export --if-default

# The console's browser tests drive Debian's chromium (scripts/ensure-browser.sh).
browser:
	bash scripts/ensure-browser.sh

demo: setup
	bash examples/demo.sh $(HAZMAT)

# ruff reads the Python that runs inside the sandbox with the rest (src/hazmat/backends/inside/);
# scripts/lint-inside.sh checks the rest of it: ShellCheck (installed when missing, as
# ensure-venv.sh installs python3-venv), node --check, javac and ruby -c where present.
lint: venv
	$(VENV)/bin/ruff check src tests benchmarks scripts
	bash scripts/lint-inside.sh

typecheck: venv
	$(VENV)/bin/mypy

# Unit tests only: no Docker engine needed.
unit: venv
	$(VENV)/bin/pytest -m "not docker" $(PYTEST_ARGS)

# The fast lane: lint, types and every test that needs no engine (budget: 2 minutes on these
# 2-core machines). Needs no Docker engine and no images.
check: lint typecheck unit

test: setup browser lint typecheck
	$(VENV)/bin/pytest -n $(TEST_JOBS) --dist loadfile $(PYTEST_ARGS)

# What CI runs (.ci/run): a Docker engine of its own with nothing left over, the images built
# there (or loaded from the cache by recipe digest), `make test` and `make cluster-test`, the
# engine removed at the end. Run it before you push: the machine's own engine can hide a
# missing step.
test-fresh:
	bash .ci/run

# What CI's `install` phase runs: hazmat installed as the README says (a fresh venv, plain pip,
# no extras, no constraints: today's newest within pyproject.toml's bounds), then `hazmat serve`
# with its MCP tools listed by the SDK's own client, and `hazmat run` through the local server.
check-install: images
	bash scripts/check-install.sh

# A real cluster on this machine (root): Redis, three Docker engines, a worker each, the
# service; 520 mixed runs with faults injected (scripts/cluster_test.py, docs/scale.md).
cluster-test: setup
	$(PY) scripts/cluster_test.py

doctor: venv engine
	$(HAZMAT) doctor

# The cgroup v2 lab (docs/cgroup-v2-lab.md): a Debian 13 guest with systemd and Docker under
# QEMU's software emulation, built once from Debian packages and cached by recipe digest in
# /var/cache/hazmat/lab; it runs the tests whose promises rest on the kernel's cgroups and
# leaves their junit XML and the console's log in /tmp/hazmat-lab. Not part of `make test`.
v2-test: venv engine
	VENV=$(VENV) bash scripts/lab/run-lab.sh

# The TypeScript client (clients/typescript/) as a package a project installs by its path:
# build/hazmat-client-<version>.tgz (npm ci from its lock file, its build, npm pack). Needs npm
# (scripts/ensure-engine.sh installs Debian's).
ts-client:
	mkdir -p build
	cd clients/typescript && npm ci --no-audit --no-fund && npm run build && \
		npm pack --pack-destination ../../build

clean:
	rm -rf $(VENV) $(SEMGREP_VENV) .mypy_cache .ruff_cache .pytest_cache
