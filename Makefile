# The README's two commands: `make reproduce` and `make test`. Both bootstrap .venv first, from
# the lock file (docs/development.md: how to update it).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
LOCK := requirements/lock.txt
export PATH := $(abspath $(BIN)):$(PATH)
# Bytecode is written as modules are first imported, so only what the pipeline and the tests
# import is compiled (after `make test`, about a third of the environment's 16,000 files), each
# once: a machine that sets PYTHONDONTWRITEBYTECODE would otherwise recompile torch in every job.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: reproduce test test-workflow test-fast chromium lock lint format report results-page dry-run clean-results mutation \
	bench-paper

# (Re)install only when the lock (or the package's own metadata) changes: the exact versions of
# the lock, then this package alone. The installer picks torch's build (CPU or CUDA wheel) and
# its CUDA runtime packages, which the lock leaves out. uv installs (it links the 6 GB from its
# cache in seconds where pip unpacked them for a minute); it reads no pip configuration, so the
# package sources pip is set up with (an index, a local mirror, a folder of wheels) are handed
# to it, with pip's rule for several indexes: the best version over all of them.
UV_VERSION := 0.13.9
UV := $(BIN)/uv
# pip's setting $(2), from its environment variable PIP_$(1) first, as pip reads them
pip_setting = "$${PIP_$(1):-$$($(BIN)/python -m pip config get global.$(2) 2>/dev/null)}"
PIP_SOURCES = UV_DEFAULT_INDEX=$(call pip_setting,INDEX_URL,index-url) \
	UV_EXTRA_INDEX_URL=$(call pip_setting,EXTRA_INDEX_URL,extra-index-url) \
	UV_FIND_LINKS=$(call pip_setting,FIND_LINKS,find-links) UV_INDEX_STRATEGY=unsafe-best-match
$(STAMP): $(LOCK) pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -qq uv==$(UV_VERSION)
	$(PIP_SOURCES) $(UV) pip install -q --python $(BIN)/python -r $(LOCK)
	$(UV) pip install -q --python $(BIN)/python --no-deps -e .
	@touch $(STAMP)

# The lock from pyproject.toml's dependencies and test extra, keeping the pins it already has
# (`make lock PIP_COMPILE_ARGS=--upgrade` moves every pin to the newest release). The packages
# only torch's CUDA wheel needs (nvidia-*, cuda-*, triton) are dropped. The conda environment's
# pip list follows the lock.
PIP_COMPILE_ARGS ?=
CONDA_ENV := envs/pipeline.yaml
lock:
	@test -x $(VENV)/tools/bin/pip-compile || \
		{ $(PYTHON) -m venv $(VENV)/tools && $(VENV)/tools/bin/pip install -qq pip-tools; }
	$(VENV)/tools/bin/pip-compile --quiet --extra test --allow-unsafe --strip-extras \
		--no-emit-index-url --no-emit-find-links $(PIP_COMPILE_ARGS) -o $(LOCK) pyproject.toml
	awk '/^[^ ]/ {cuda = /^(nvidia-|cuda-|triton==)/} !cuda' $(LOCK) >$(LOCK).tmp
	mv $(LOCK).tmp $(LOCK)
	{ sed '/^  - pip:$$/q' $(CONDA_ENV); sed -n 's/^[a-z0-9][^ ]*==[^ ]*$$/      - &/p' $(LOCK); \
		echo '      - -e ../'; } >$(CONDA_ENV).tmp
	mv $(CONDA_ENV).tmp $(CONDA_ENV)

reproduce: $(STAMP)
	$(BIN)/snakemake --cores all

# The tests in three tiers (docs/development.md#tests), each on every core. `make test`: every
# test but the end-to-end ones (marked workflow), the science's checks and the workflow's plans
# (dry runs) included. `make test-workflow`: the end-to-end tests, which share one tiny run of
# the whole DAG (tests/conftest.py); Chromium for the report's browser test is installed first,
# where apt-get and root allow (beside the environment's install: a sub-make runs both at once,
# and under `make -n` it only prints them), else a warning (pytest's summary repeats it).
# `make test-fast`: neither the workflow tests nor those marked slow (seconds each, pyproject.toml).
test: $(STAMP)
	$(BIN)/python -m pytest -m "not workflow" -n auto

test-workflow:
	@$(MAKE) --no-print-directory -j2 $(STAMP) chromium
	$(BIN)/python -m pytest -m workflow -n auto

chromium:
	@bash .ci/install-chromium

test-fast: $(STAMP)
	$(BIN)/python -m pytest -m "not slow and not workflow" -n auto

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

# docs/results.md: the claims and CPU times of the run under results/, stamped with commit, date
# and machine.
results-page: $(STAMP)
	$(BIN)/python -m transformer_stability.claims_page results docs/results.md

# The paper preset measured on this machine (bench/paper_scale.py): the item of every rule the
# cluster plan sizes, reduced where the CPU cannot run it, beside the cost model; its records
# set the profile's memory requests (cluster_plan --write). About 15 minutes on 2 cores.
bench-paper: $(STAMP)
	$(BIN)/python bench/paper_scale.py --json bench/paper_scale.json --results bench/RESULTS.md
	$(BIN)/python -m transformer_stability.cluster_plan --write

dry-run: $(STAMP)
	$(BIN)/snakemake -n

clean-results:
	rm -rf results .snakemake

# Mutation testing of a study's science modules (bench/mutation.py; slow, not in CI), e.g.
# `make mutation STUDY=counting MODULES="theory rates"` (TESTS="theory": only
# tests/test_counting_theory.py). mutmut is pinned here, not in the lock.
MUTMUT := $(VENV)/.mutmut-3.8.1
$(MUTMUT): $(STAMP)
	$(BIN)/python -m pip install -qq mutmut==3.8.1
	@touch $@
mutation: $(MUTMUT)
	$(BIN)/python bench/mutation.py --study $(STUDY) $(MODULES) $(if $(TESTS),--tests $(TESTS))
