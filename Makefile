# make run  : set everything up and start gateway, conversion workers, edit service, check and clash workers under supervisord
#            (foreground; a dead process is restarted; Ctrl-C stops all; docs/operations/supervisor.md)
# make test : set everything up and run the whole test suite
# make test-fast : the unit and API tests only (no browser, no end-to-end stacks, no heavy tests, no benchmarks) on 2 pytest-xdist
#            workers: the inner loop (docs/testing.md)
# make lint : the import contract (.importlinter) and the lint (ruff.toml); docs/development.md
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
PIP_STAMP := $(VENV)/.installed
NPM_STAMP := converter/node_modules/.installed
CONVERTER_BUNDLE := converter/dist/convert.mjs
WEB_STAMP := frontend/dist/.built
OIDC_PROVIDER_STAMP := tests/accounts/oidc_provider/node_modules/.installed

# The set-up steps (the Python environment, the converter's and the web client's npm installs and builds, the test
# OpenID provider) are independent of one another: made side by side. (Not --output-sync: it would hold back the
# output of `make run` and `make test` until they end.)
MAKEFLAGS += --jobs=4

export VIEWER_CONFIG ?= ./server_config.json
export EDIT_SERVICE_PORT ?= 8100

.PHONY: run test test-fast lint setup prerequisites test-prerequisites bytecode bench bench-smoke clean

setup: prerequisites $(PIP_STAMP) $(CONVERTER_BUNDLE) $(WEB_STAMP)

prerequisites:
	@bash scripts/prerequisites.sh

# after `prerequisites`: apt-get takes one lock, so the two never install side by side
test-prerequisites: prerequisites
	@bash scripts/prerequisites.sh --browser

# the installed packages compiled to bytecode on every core (pip compiles them one by one: ~26 of its ~62 s here)
$(PIP_STAMP): requirements.txt requirements.lock | prerequisites
	@test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check --no-compile -r requirements.txt -c requirements.lock
	@$(PY) -m compileall -q -j 0 $(VENV)/lib
	@touch $@

$(NPM_STAMP): converter/package.json converter/package-lock.json | prerequisites
	cd converter && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

# the converter the workers run: convert.js with xeokit-convert bundled by esbuild
$(CONVERTER_BUNDLE): $(NPM_STAMP) converter/convert.js converter/build.mjs
	cd converter && node build.mjs

# the web client: xeokit-sdk bundled by esbuild into frontend/dist (served by the gateway under /static/viewer/)
$(WEB_STAMP): frontend/package.json frontend/package-lock.json frontend/build.mjs $(wildcard frontend/src/*) chat_app/frames.json | prerequisites
	cd frontend && npm ci --no-audit --no-fund --loglevel=error && node build.mjs
	@touch $@

# supervisord reads its settings from this environment (scripts/supervisord.conf); dataDir as the config resolves it
# (absolute, VIEWER_DATA_DIR taken into account) so that its run/ folder does not depend on the current directory
run: setup
	@data_dir=$$($(PY) -m viewer_gateway.config dataDir) || exit 2; \
	workers=$$($(PY) -m viewer_gateway.config conversionWorkers) || exit 2; \
	$(PY) -m viewer_gateway.config --check-converter || exit 2; \
	export VIEWER_DATA_DIR=$$data_dir; \
	export VIEWER_EDIT_SERVICE_URL=$${VIEWER_EDIT_SERVICE_URL:-http://127.0.0.1:$$EDIT_SERVICE_PORT}; \
	export RUN_PYTHON=$(abspath $(PY)) RUN_CONVERSION_WORKERS=$$workers; \
	mkdir -p "$$VIEWER_DATA_DIR/run" && chmod 700 "$$VIEWER_DATA_DIR/run" && \
	$(PY) manage.py migrate --noinput -v 0 && \
	exec $(VENV)/bin/supervisord --nodaemon --configuration $(CURDIR)/scripts/supervisord.conf

# the OpenID Connect provider the single sign-on tests run (npm's oidc-provider, tests/accounts/oidc_provider)
$(OIDC_PROVIDER_STAMP): tests/accounts/oidc_provider/package.json tests/accounts/oidc_provider/package-lock.json | prerequisites
	cd tests/accounts/oidc_provider && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

# on TEST_WORKERS pytest-xdist workers (a module's tests stay on one worker: its stack of real processes is set up
# once), modules in the order tests/conftest.py gives them (the ones starting real processes first), not xdist's
# (most tests first); the slowest tests are listed at the end (docs/testing.md). With VIEWER_PG_DSN, the storage
# tests then run again on PostgreSQL. (Run alongside the SQLite run instead, they saved ~10 s of ~12.5 min and the
# extra load made a browser test time out once: docs/benchmarks/2026-11-26-test-suite.md.) One worker more than the
# machine has cores: the tests of real processes wait on them often enough that as many workers as cores left the
# machine ~14 % idle (2 cores: pytest 644 s on 3 workers against 719-752 s on 2, on 2026-11-28's machine).
TEST_WORKERS ?= $(shell echo $$(( $$(nproc) + 1 )))
# pytest with PYTHONDONTWRITEBYTECODE unset (see `bytecode` below)
PYTEST := env -u PYTHONDONTWRITEBYTECODE $(PY) -m pytest
test: setup test-prerequisites $(OIDC_PROVIDER_STAMP) bytecode
	env -u VIEWER_PG_DSN $(PYTEST) -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=25
	@if [ -n "$$VIEWER_PG_DSN" ]; then \
		echo "== storage tests again on PostgreSQL ($$VIEWER_PG_DSN) =="; \
		$(PYTEST) -m storage -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder; \
	fi

# The project's modules compiled to bytecode before the tests (compileall skips what is up to date): the ~200 Python
# processes a run starts (gateways, workers, edit services, manage.py) then load them instead of compiling ~240
# modules from source each, also where PYTHONDONTWRITEBYTECODE is set, as in many containers (~0.3 s of processor time
# per gateway start). The test runs also unset it, so that pytest keeps the test modules it rewrote (~7 s of processor
# time per worker's collection from the second run on). docs/testing.md
bytecode: $(PIP_STAMP)
	@$(PY) -m compileall -q -j 0 -x /node_modules/ manage.py $(dir $(wildcard */__init__.py))

# -m "not e2e and not heavy" leaves out every test that starts the real processes (tests/e2e, tests/browser and the
# e2e-marked modules elsewhere) and the heavy in-process ones (samples through whole engines, real sandboxes,
# manage.py children, whole-schema migrations); the paths are ignored too, so that not even their modules are imported
FAST_WORKERS ?= 2
test-fast: setup bytecode
	env -u VIEWER_PG_DSN $(PYTEST) -m "not e2e and not heavy" --ignore=tests/browser --ignore=tests/e2e -n $(FAST_WORKERS) -q --durations=10

lint: $(PIP_STAMP)
	$(VENV)/bin/lint-imports --no-cache
	$(VENV)/bin/ruff check --no-cache .

BENCHES := conversion review_api sandbox semantic_diff diff_geometry proxy chat_stream turn_overhead scale_out ids_check web_open clash

bench: setup
	@set -e; for name in $(BENCHES); do echo "== bench/$$name.py"; $(PY) bench/$$name.py; done

# every benchmark at its smallest size, once (docs/benchmarks/index.md): it runs and prints its figures; .ci/run
# runs this after the tests. The time each took is printed after it, the total at the end.
bench-smoke: setup test-prerequisites
	@all=$${EPOCHREALTIME/./}; for name in $(BENCHES); do \
		echo "== bench/$$name.py --smoke"; started=$${EPOCHREALTIME/./}; \
		$(PY) bench/$$name.py --smoke || { echo "== bench/$$name.py --smoke FAILED"; exit 1; }; \
		took=$$(( $${EPOCHREALTIME/./} - started )); \
		printf '== bench/%s.py --smoke: %d.%d s\n' $$name $$(( took / 1000000 )) $$(( took / 100000 % 10 )); \
	done; took=$$(( $${EPOCHREALTIME/./} - all )); \
	printf '== all benchmarks, --smoke: %d.%d s\n' $$(( took / 1000000 )) $$(( took / 100000 % 10 ))

clean:
	rm -rf $(VENV) converter/node_modules converter/dist frontend/node_modules frontend/dist
