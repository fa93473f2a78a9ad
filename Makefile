VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
CTXKIT := $(VENV)/bin/ctxkit

.PHONY: install run test lint bench snapshots clean

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -e '.[test]'
	touch $@

install: $(VENV)/.installed

run: install
	$(CTXKIT) assemble fixtures/tool_loop_in_flight.yaml --format text

test: install
	$(PY) -m pytest

lint: install
	$(PIP) install -q -e '.[lint]'
	$(VENV)/bin/ruff check ctxkit tests
	$(VENV)/bin/mypy ctxkit

bench: install
	$(PIP) install -q -e '.[bench]'
	$(PY) benchmarks/run.py

snapshots: install
	$(PY) -m pytest --snapshot-update

clean:
	rm -rf $(VENV) build *.egg-info
