# iowall: `make limits` (set-up + the main job) and `make test` (set-up + the whole suite).
VENV    ?= .venv
PY      := $(VENV)/bin/python
IOWALL  := $(VENV)/bin/iowall
PYTHON  ?= python3
ARGS    ?=
PYTEST_ARGS ?=

.PHONY: setup setup-parts limits test fuzz deps engine inferno bytecode lint typecheck clean

## setup: Debian packages (as root), the virtualenv, the package and its C engine. Idempotent.
##   After the packages, the flame-graph tools (cargo: a minute the first time, then from its
##   build cache) build while pip installs the package: make -j2 of the parts.
setup: deps
	@$(MAKE) --no-print-directory -j2 setup-parts

setup-parts: $(VENV)/.stamp-install engine inferno bytecode

## bytecode: iowall's own modules compiled once (pip compiles the dependencies, not an editable
##   package's source): every `iowall` the suite starts, and every emulated guest of `iowall ab`
##   (which sees this tree), would otherwise compile them again where PYTHONDONTWRITEBYTECODE
##   is set, as it is in some containers. Changed files are compiled again as they are read.
bytecode: $(VENV)/.stamp-install
	@$(PY) -m compileall -q -j0 src/iowall

deps:
	@sh scripts/setup-debs.sh

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

$(VENV)/.stamp-install: $(VENV)/bin/python pyproject.toml setup.py
	$(PY) -m pip install -q -e '.[test,ab]'
	@touch $@

engine: $(VENV)/.stamp-install
	@$(MAKE) -s -C engine OUT=$(CURDIR)/src/iowall/_bin

## inferno: the flame-graph tools (inferno crate) in $(VENV)/bin: profile probe, plot flame.
inferno: $(VENV)/bin/python
	@sh scripts/setup-inferno.sh $(VENV)

## limits: the main job on the default bed.
limits: setup
	$(IOWALL) limits $(ARGS)

## test: the whole suite (real fio, real loop devices and filesystems).
##   the emulated guests run beside the lint and the unit tests, then the tests that measure
##   run alone (scripts/test-lanes.sh); PYTEST_ARGS=... runs one pytest of your selection.
test: setup
ifeq ($(strip $(PYTEST_ARGS)),)
	sh scripts/test-lanes.sh $(VENV)
else
	$(PY) -m pytest -q -rs --durations=40 $(PYTEST_ARGS)
endif

## fuzz: the fuzzers at full strength (10,000 inputs each; `make test` runs 1,000 of each).
fuzz: setup
	IOWALL_FUZZ_EXAMPLES=10000 $(PY) -m pytest -q -rs tests/fuzz

lint: setup
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/ruff format --check src tests benchmarks scripts
	$(VENV)/bin/lint-imports
typecheck: setup
	$(VENV)/bin/mypy

clean:
	rm -rf build dist src/*.egg-info src/iowall/_bin engine/build
