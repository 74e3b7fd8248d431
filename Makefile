# Two commands: `make run` and `make test`. Both set up the virtual environment first.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
RUN_STAMP := $(VENV)/.installed-runtime

.PHONY: run test setup e2e-deps state-deps lint typecheck bench bench-peers clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test,bench]'
	touch $(STAMP)

setup: $(STAMP)

# `make run` needs the runtime dependencies only (no SDKs, test or benchmark tools).
$(RUN_STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e .
	touch $(RUN_STAMP)

# The real coding-agent CLIs that tests/e2e drives (pinned in tests/e2e/package.json + package-lock.json).
# No install scripts: the CLI runs without its optional native add-ons. GUARDPROXY_SKIP_E2E=1 skips it.
E2E := tests/e2e
E2E_STAMP := $(E2E)/node_modules/.installed
$(E2E_STAMP): $(E2E)/package.json $(E2E)/package-lock.json
	npm ci --prefix $(E2E) --no-audit --no-fund --ignore-scripts
	touch $(E2E_STAMP)

e2e-deps: $(E2E_STAMP)

# A real Valkey/Redis server for the shared-state tests (tests/state/test_shared_state.py,
# tests/state/test_state_store.py): Debian's redis-server when neither valkey-server nor redis-server is on
# PATH (apt-get as root, or through sudo). Where that is impossible the tests skip, saying why.
SUDO := $(if $(filter 0,$(shell id -u)),,$(shell command -v sudo))
state-deps:
	@command -v valkey-server >/dev/null 2>&1 || command -v redis-server >/dev/null 2>&1 || \
	  { $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends redis-server; } || \
	  echo "*** make state-deps: could not install redis-server: the shared-state tests over a real Valkey/Redis will be SKIPPED ***" >&2

run: $(RUN_STAMP)
	$(BIN)/guardproxy serve

# In parallel (pytest-xdist): one worker per core, a test file per worker at a time (its module
# fixtures, such as a proxy with its policy, are built once). PYTEST_WORKERS=0 runs in one process.
PYTEST_WORKERS ?= auto
test: $(STAMP) state-deps $(if $(filter 1,$(GUARDPROXY_SKIP_E2E)),,$(E2E_STAMP))
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadfile

lint: $(STAMP)
	$(BIN)/ruff check proxy guardrails config guardproxy setup.py tests bench
	$(BIN)/mypy
	$(BIN)/lint-imports

bench: $(STAMP)
	$(BIN)/python -m bench.run

bench-peers: $(STAMP)
	$(BIN)/python -m bench.run --peers

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache
