# Two commands do everything on a fresh clone: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test test-loaded smoke lint typecheck docs pytest clone-check bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# Stamps re-run the install whenever pyproject.toml changes.
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[dev,strands,tiktoken,http,embeddings,mcp,postgres]'
	touch $@ $(VENV)/.installed

demo: $(VENV)/.installed
	$(BIN)/python examples/demo.py

# Lint, types and the API reference first; then the whole suite and the clone check side by
# side, one on each core (no test depends on the machine's load), each one's output whole.
test: lint typecheck docs
	$(MAKE) --no-print-directory -j2 --output-sync=target pytest clone-check

# A fresh clone of HEAD installs from nothing, runs the demo and a smoke subset of the tests.
clone-check:
	scripts/clone-check

# The whole suite with two CPU-burning processes per core beside it: no test may depend on
# how fast the machine runs.
test-loaded: $(VENV)/.installed-dev
	scripts/with-load $(BIN)/pytest -q

# Collects every test, then runs the first test of each test module.
smoke: $(VENV)/.installed-dev
	$(BIN)/pytest -q --collect-only > /dev/null
	$(BIN)/pytest -q --smoke

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check src tests benchmarks examples scripts/docs
	$(BIN)/ruff format --check src tests benchmarks examples scripts/docs

typecheck: $(VENV)/.installed-dev
	$(BIN)/mypy src

# The API reference, from the docstrings, into build/reference (git-ignored). Strict: a
# warning (a docstring naming a missing object, an argument the signature lacks) fails it,
# and so does a public name the reference leaves out (scripts/docs/check_reference.py).
docs: $(VENV)/.installed-dev
	$(BIN)/mkdocs build --strict --quiet

pytest: $(VENV)/.installed-dev
	$(BIN)/pytest -q

bench: $(VENV)/.installed-dev
	$(BIN)/python benchmarks/bench_jsonfile.py
	$(BIN)/python benchmarks/bench_buffer.py
	$(BIN)/python benchmarks/bench_manager.py
	$(BIN)/python benchmarks/bench_sqlite.py
	$(BIN)/python benchmarks/bench_mcp.py
	$(BIN)/python benchmarks/bench_import_floor.py
	$(BIN)/python benchmarks/bench_cli.py
	$(BIN)/python benchmarks/bench_list.py
	$(BIN)/python benchmarks/bench_long_memory.py
	$(BIN)/python benchmarks/bench_changes.py
	$(BIN)/python benchmarks/bench_postgres.py
	$(BIN)/python benchmarks/postgres_recall.py

clean:
	rm -rf $(VENV) .demo
