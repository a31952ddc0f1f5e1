# Two commands matter: `make run` and `make test` (see README.md). Everything else is a step of them.
SHELL := /bin/bash
.DEFAULT_GOAL := help
NODE_BIN := node_modules/.bin
TSX := $(NODE_BIN)/tsx
# Every test file (find test -name '*.test.ts'), the longest first (scripts/test-files.sh), run in
# that order by scripts/run-tests.ts (node --test would sort them by name).
TEST_FILES = $(shell bash scripts/test-files.sh)
CHECK_JOBS := $(shell nproc 2>/dev/null || echo 2)

.PHONY: help install generate check-generated lint typecheck build run test test-sqlite check-breaking test-postgres bench seed test-templates check-layers

help:
	@echo "make run     install, build, migrate + seed the embedded database, start the server"
	@echo "make test    install, check generated/ drift, lint openapi.yaml, typecheck, run every test"

# Installs only when node_modules is missing or older than the lock file.
node_modules/.install-stamp: package.json package-lock.json
	npm ci --no-audit --no-fund
	@touch $@

install: node_modules/.install-stamp

generate: install
	$(TSX) scripts/generate.ts

# Fails when generated/ differs from what openapi.yaml produces.
check-generated: install
	@tmp=$$(mktemp -d) && $(TSX) scripts/generate.ts --out $$tmp >/dev/null && \
	if ! diff -r -q $$tmp generated >/dev/null; then \
	  echo "generated/ is out of date with openapi.yaml: run 'make generate' and commit" >&2; diff -r $$tmp generated | head -40 >&2; rm -rf $$tmp; exit 1; \
	fi; rm -rf $$tmp; echo "generated/ matches openapi.yaml"

lint: install
	$(NODE_BIN)/redocly lint openapi.yaml --config .redocly.yaml --format stylish

# The breaking-change gate: the public document against the published 3.0.0 baseline (Optic's
# breaking-changes ruleset, in-process, on what changed: docs/decisions/0270-breaking-change-gate-in-process.md).
check-breaking: install
	$(TSX) scripts/check-breaking.ts

typecheck: install
	$(NODE_BIN)/tsc -p tsconfig.json --noEmit

# The floors of src/ and the direction of their imports (.dependency-cruiser.cjs: entry points ->
# app/http, v2 -> services -> events, engines -> storage -> catalog, errors, auth, telemetry; no
# circle; no db/seed or bench from src). A violation fails with the rule's name and why.
check-layers: install
	$(NODE_BIN)/depcruise src --config .dependency-cruiser.cjs --output-type err-long

build: install
	rm -rf dist && $(NODE_BIN)/tsc -p tsconfig.build.json

run: build
	npm start

seed: install
	$(TSX) db/seed/cli.ts

# STATUS_LOG collects every (operation, status) pair the suite answered; scripts/check-statuses.ts
# then fails on any status its operation does not declare in openapi.yaml.
test-sqlite: install
	$(if $(TEST_FILES),,$(error scripts/test-files.sh listed no test file))
	@log=$$(mktemp); TEST_ENGINE=sqlite STATUS_LOG=$$log node --import tsx scripts/run-tests.ts --concurrency=2 $(TEST_FILES); \
	rc=$$?; if [ $$rc -eq 0 ]; then $(TSX) scripts/check-statuses.ts $$log; rc=$$?; fi; rm -f $$log; exit $$rc

# Runs the same suite on PostgreSQL when TEST_POSTGRES_URL is set (CI sets it).
test-postgres: install
	$(if $(TEST_FILES),,$(error scripts/test-files.sh listed no test file))
	@if [ -n "$$TEST_POSTGRES_URL" ]; then \
	  log=$$(mktemp); TEST_ENGINE=postgres STATUS_LOG=$$log node --import tsx scripts/run-tests.ts --concurrency=2 $(TEST_FILES); \
	  rc=$$?; if [ $$rc -eq 0 ]; then $(TSX) scripts/check-statuses.ts $$log; rc=$$?; fi; rm -f $$log; exit $$rc; \
	else echo "TEST_POSTGRES_URL not set: PostgreSQL suite skipped"; fi

# The database templates the suites copy (the seeded demo company, the empty database), built
# before the suites so that their first files do not wait for a seed (test/support/app.ts).
test-templates: install
	TEST_ENGINE=sqlite node --import tsx test/support/prepare-templates.ts
	@if [ -n "$$TEST_POSTGRES_URL" ]; then TEST_ENGINE=postgres node --import tsx test/support/prepare-templates.ts; fi

# The five checks and the templates are independent and mostly single-threaded: they run side by
# side (one per core), each one's output printed whole when it ends.
test: install
	$(MAKE) --no-print-directory -j$(CHECK_JOBS) --output-sync=target check-generated lint check-breaking typecheck check-layers test-templates
	$(MAKE) --no-print-directory test-sqlite
	$(MAKE) --no-print-directory test-postgres

# Posting throughput and the HTTP surface overhead (bench/README.md: how to run each benchmark,
# including bench/query.ts and bench/fuzz.ts, and on PostgreSQL).
bench: build
	node --import tsx bench/posting.ts
	$(TSX) bench/surface.ts
