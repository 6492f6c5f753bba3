# Two commands do all set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
# Every install is constrained to the pinned set: the same versions on every machine.
LOCK   := requirements.lock
PIP_VERSION := 26.3

.PHONY: demo test bench lint clean sysdeps lock

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet 'pip==$(PIP_VERSION)'

$(VENV)/.installed: $(BIN)/python pyproject.toml $(LOCK)
	$(BIN)/pip install --quiet -c $(LOCK) -e .
	touch $@

$(VENV)/.installed-dev: $(BIN)/python pyproject.toml $(LOCK)
	$(BIN)/pip install --quiet -c $(LOCK) -e '.[dev]'
	touch $(VENV)/.installed $@

# Refresh the pinned set: resolve pyproject.toml's ranges afresh in a scratch venv and
# freeze it. Then run `make test` (golden files) and commit requirements.lock.
lock:
	rm -rf .lock-venv
	$(PYTHON) -m venv .lock-venv
	.lock-venv/bin/pip install --quiet 'pip==$(PIP_VERSION)'
	.lock-venv/bin/pip install --quiet -e '.[dev]'
	{ sed -n '/^#/p' $(LOCK); .lock-venv/bin/pip freeze --exclude-editable | grep -v '^[#-]'; } > $(LOCK).new
	mv $(LOCK).new $(LOCK)
	rm -rf .lock-venv

# The package byte-compiled up front: where PYTHONDONTWRITEBYTECODE is set (our CI hosts)
# every process would compile what it imports (0.3 s of the 2.4-s default train command).
demo: $(VENV)/.installed
	$(BIN)/python -m compileall -q src
	$(BIN)/topocoll demo

# The emulated-cluster tests need iproute2 (ip, tc), the report test Debian's chromium;
# install them when missing and possible.
sysdeps:
	@if ! command -v ip >/dev/null 2>&1 || ! command -v tc >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iproute2; \
	  else echo "iproute2 missing and not installable here: testbed tests will be skipped"; fi; \
	fi
	@if ! command -v chromium >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; \
	  else echo "chromium missing and not installable here: the report browser test will be skipped"; fi; \
	fi

# Two phases: the suite on two workers, then the tests marked `alone` one at a time with
# the machine to themselves (real-time emulation whose Python peers must keep up with the
# emulated line rate; beside the torch or Ray batteries they were starved of CPU).
test: $(VENV)/.installed-dev sysdeps
	$(BIN)/python -m compileall -q src
	$(BIN)/python -m pytest -q -n 2 -m "not alone"
	$(BIN)/python -m pytest -q -m alone

bench: $(VENV)/.installed
	$(BIN)/python benchmarks/bench_core.py

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check src tests benchmarks

clean:
	rm -rf $(VENV) .lock-venv build *.egg-info src/*.egg-info
