# Two commands matter: `make demo` and `make test`. Both create .venv when it is missing.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export TF_CPP_MIN_LOG_LEVEL ?= 2
export PYTHONHASHSEED ?= 0

.PHONY: demo test test-fast test-next test-tfjs check bench lint install browser clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# Reinstall only when the project's own dependency list changes.
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --upgrade --quiet pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

# The HTML report is tested in Debian's headless Chromium, and bench_serve's load generator is
# h2load (Debian's nghttp2-client); install them when they are missing.
browser:
	@command -v chromium >/dev/null 2>&1 && command -v h2load >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium nghttp2-client >/dev/null) \
	      || echo "warning: could not install chromium and nghttp2-client; the report browser test will fail"; \
	  else echo "warning: chromium or h2load missing and not root; install Debian's chromium and nghttp2-client"; fi; }

demo: install
	$(BIN)/tfpilot run

# Static checks: ruff (lint + format) and mypy (strict for lint/ and serve/, basic elsewhere).
check: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

test: install browser
	$(BIN)/python -m pytest -n 2 --dist loadfile -q -p no:cacheprovider --durations=15

test-fast: install
	$(BIN)/python -m pytest -n 2 --dist loadfile -q -m "not slow"

# TF.js export from nothing: installs the converter and @tensorflow/tfjs into an empty tool directory
# (PyPI and npm), converts a digits model and checks it in Node; prints the measured times.
test-tfjs: install
	$(BIN)/python -m pytest -q -s -p no:cacheprovider -m tfjs -rs tests/integration/test_export_tfjs.py

# The suite against tf-nightly and keras-nightly in a separate environment (.venv-next), to see what
# the next TensorFlow/Keras release breaks; .ci/run stays on the pinned versions.
test-next: browser
	$(PYTHON) scripts/next_env.py .venv-next
	.venv-next/bin/python -m pytest -n 2 --dist loadfile -q -p no:cacheprovider

bench: install
	@for f in benchmarks/bench_*.py; do echo "== $$f"; $(BIN)/python $$f || exit 1; done

lint: install
	$(BIN)/tfpilot lint src

clean:
	rm -rf runs .pytest_cache
