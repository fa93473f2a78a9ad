VENV ?= .venv
# The extras `make install` brings; CI adds `browser` (.ci/run): EXTRAS=test,lint,browser
EXTRAS ?= test,lint
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
CTXKIT := $(VENV)/bin/ctxkit

.PHONY: install run test lint format bench snapshots screenshot clean

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	-$(PIP) uninstall -q -y ctxkit 2>/dev/null  # the distribution's old name (now ctxkit-cli)
	$(PIP) install -q -e '.[$(EXTRAS)]'
	touch $@

install: $(VENV)/.installed

run: install
	$(CTXKIT) assemble fixtures/tool_loop_in_flight.yaml --format text

# The quality gates run before the tests, here and in CI.
test: lint
	$(PY) -m pytest

lint: install
	$(VENV)/bin/ruff check ctxkit tests benchmarks scripts
	$(VENV)/bin/ruff format --check ctxkit tests benchmarks scripts
	$(VENV)/bin/mypy

format: install
	$(VENV)/bin/ruff check --fix ctxkit tests benchmarks scripts
	$(VENV)/bin/ruff format ctxkit tests benchmarks scripts

bench: install
	$(PIP) install -q -e '.[bench]'
	$(PY) benchmarks/run.py

# docs/report.png and docs/report-replay.png: gallery reports in headless Chromium (the system's `chromium` package)
screenshot: install
	$(PIP) install -q -e '.[browser]'
	$(PY) scripts/screenshot.py

snapshots: install
	$(PY) -m pytest --snapshot-update

clean:
	rm -rf $(VENV) build *.egg-info
