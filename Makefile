# The README's two commands: `make reproduce` and `make test`. Both bootstrap .venv first.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export PATH := $(abspath $(BIN)):$(PATH)

.PHONY: reproduce test lint format report dry-run clean-results

# (Re)install only when the project's dependencies change.
$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -qq -e '.[test]'
	@touch $(STAMP)

reproduce: $(STAMP)
	$(BIN)/snakemake --cores all

test: $(STAMP)
	$(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/snakefmt --check Snakefile workflow/rules
	$(BIN)/snakemake --lint

format: $(STAMP)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .
	$(BIN)/snakefmt Snakefile workflow/rules

# The figures that exist, for the configuration their run recorded; runs no job.
report: $(STAMP)
	$(BIN)/python -m transformer_stability.report

dry-run: $(STAMP)
	$(BIN)/snakemake -n

clean-results:
	rm -rf results .snakemake
