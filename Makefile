# Two commands: `make run` and `make test`. Both set up the virtual environment first.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test setup lint typecheck bench bench-peers clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test,bench]'
	touch $(STAMP)

setup: $(STAMP)

run: $(STAMP)
	$(BIN)/guardproxy serve

test: $(STAMP)
	$(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check proxy guardrails config tests bench
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python -m bench.run

bench-peers: $(STAMP)
	$(BIN)/python -m bench.run --peers

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache
