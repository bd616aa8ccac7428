# The two commands a newcomer needs: `make run` (the whole local stack) and `make test`.
# uv is used when it is on PATH; otherwise it is bootstrapped into .tools/ through pip.
SHELL := /bin/bash
PYTHON ?= python3
UV_VERSION ?= 0.9.5
UV := $(shell command -v uv 2>/dev/null || echo .tools/bin/uv)
export UV_PYTHON_DOWNLOADS := never
# The real interpreter, not a shim (pyenv's shims are scripts uv cannot match).
export UV_PYTHON := $(shell $(PYTHON) -c 'import sys; print(sys.executable)')

.PHONY: run test lint typecheck pytest sync clean soak

.tools/bin/uv:
	$(PYTHON) -m venv .tools
	.tools/bin/pip install --quiet "uv>=$(UV_VERSION)"

sync: $(if $(filter .tools/bin/uv,$(UV)),.tools/bin/uv)
	$(UV) sync --frozen --all-packages --quiet

run: sync
	$(UV) run --frozen --no-sync python -m deploy.local $(RUN_ARGS)

lint: sync
	$(UV) run --frozen --no-sync ruff check .
	$(UV) run --frozen --no-sync ruff format --check .

typecheck: sync
	$(UV) run --frozen --no-sync mypy

pytest: sync
	$(UV) run --frozen --no-sync pytest -n auto --dist loadfile $(PYTEST_ARGS)

test: lint typecheck pytest

# By hand, never in CI: security.md §5 at full size against the real stack (docs/soak.md).
# SOAK_ARGS="--deliveries 300 --kills 5 --outage 10s" for a quick run.
soak: sync
	$(UV) run --frozen --no-sync python -m bench.soak $(SOAK_ARGS)

clean:
	rm -rf .venv .tools .mypy_cache .ruff_cache .pytest_cache
