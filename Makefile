# The two commands a newcomer needs: `make run` (the whole local stack) and `make test`.
# uv is used when it is on PATH; otherwise it is bootstrapped into .tools/ through pip.
SHELL := /bin/bash
PYTHON ?= python3
UV_VERSION ?= 0.9.5
UV := $(shell command -v uv 2>/dev/null || echo .tools/bin/uv)
export UV_PYTHON_DOWNLOADS := never
# The real interpreter, not a shim (pyenv's shims are scripts uv cannot match).
export UV_PYTHON := $(shell $(PYTHON) -c 'import sys; print(sys.executable)')

.PHONY: run test lint typecheck pytest sync clean soak chromium compat-clients conformance

.tools/bin/uv:
	$(PYTHON) -m venv .tools
	.tools/bin/pip install --quiet "uv>=$(UV_VERSION)"

# Bytecode compiled once here: the dependencies at install, the workspace's own code (an
# editable install) after. Every Python process the stack and the tests start (a hundred
# in `make test`) then reads it instead of compiling what it imports again, which costs
# ~1 s of CPU per service process when PYTHONDONTWRITEBYTECODE is set (as on CI machines).
sync: $(if $(filter .tools/bin/uv,$(UV)),.tools/bin/uv)
	$(UV) sync --frozen --all-packages --compile-bytecode --quiet
	$(UV) run --frozen --no-sync python -m compileall -q -j 0 shared services deploy bench >/dev/null

run: sync
	$(UV) run --frozen --no-sync python -m deploy.local $(RUN_ARGS)

lint: sync
	$(UV) run --frozen --no-sync ruff check .
	$(UV) run --frozen --no-sync ruff format --check .

typecheck: sync
	$(UV) run --frozen --no-sync mypy

# One pytest worker more than the CPUs: a part of the suite waits on the processes it
# starts (stacks, clients, timeouts), and a third worker on 2 CPUs fills that (-13% here).
PYTEST_WORKERS ?= $(shell $(PYTHON) -c 'import os; print(len(os.sched_getaffinity(0)) + 1)')

# Chromium for the browser tests (tests/support/browser.py drives it through Playwright):
# one on PATH or Playwright's own is used; else, as root with apt, Debian's package (these
# machines cannot reach Playwright's download); else Playwright's own download.
chromium: sync
	@if ! $(UV) run --frozen --no-sync python -m tests.support.browser; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing Debian's chromium for the browser tests"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
	      apt-get install -y -qq --no-install-recommends chromium >/dev/null; \
	  else \
	    $(UV) run --frozen --no-sync playwright install chromium; \
	  fi; \
	fi

pytest: sync chromium
	$(UV) run --frozen --no-sync pytest -n $(PYTEST_WORKERS) --dist loadfile $(PYTEST_ARGS)

# The checks and the tests at once (mypy's half minute of one CPU beside pytest's waits);
# each target's output is shown whole when it ends; make fails if any of them does.
test: sync
	@$(MAKE) --no-print-directory --jobs=3 --output-sync=target lint typecheck pytest

# By hand, never in CI: security.md §5 at full size against the real stack (docs/soak.md).
# SOAK_ARGS="--deliveries 300 --kills 5 --outage 10s" for a quick run.
# The zenml client's compat tests with other 0.96 patch releases than the reference's 0.96.3
# (which `make test` runs): the oldest and the newest on PyPI, each installed once into the
# cache beside 0.96.3's. By hand: it installs what `make test` does not need.
COMPAT_CLIENTS ?= 0.96.0 0.96.4
COMPAT_TESTS := tests/compat/test_zenml_client.py tests/compat/test_zenml_cli.py \
	tests/e2e/test_device_flow.py
compat-clients: sync
	@for version in $(COMPAT_CLIENTS); do echo "the zenml $$version client"; \
	  COMPAT_ZENML_CLIENT=$$version $(UV) run --frozen --no-sync pytest -n $(PYTEST_WORKERS) \
	    --dist loadfile $(COMPAT_TESTS) || exit 1; \
	done

soak: sync
	$(UV) run --frozen --no-sync python -m bench.soak $(SOAK_ARGS)

# By hand, never in CI: every OpenAPI document whole against a stack with a new seed
# (CONFORMANCE_SEED, CONFORMANCE_EXAMPLES, CONFORMANCE_URL: docs/testing.md).
conformance: sync
	$(UV) run --frozen --no-sync python -m bench.conformance $(CONFORMANCE_ARGS)

clean:
	rm -rf .venv .tools .mypy_cache .ruff_cache .pytest_cache
