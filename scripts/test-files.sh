#!/usr/bin/env bash
# The test files of `make test-sqlite` and `make test-postgres`, in the order they are started:
# every file `find test -name '*.test.ts'` finds (that is the set: a new file runs without being
# listed here), the longest of them first, the rest in name order. scripts/run-tests.ts starts the
# files in this order, two at a time (node --test would sort them by name): with the longest ones
# first the two lanes end together instead of one waiting for a long file started last
# (docs/decisions/0340-test-files-longest-first.md).
#
# LONGEST_FIRST: the files that took about 4 s or more of a lane (SQLite, or PostgreSQL scaled by
# 0.6: measured 2026-11-26 under load, wall time less the time spent waiting for a CPU), longest
# first. A listed name that no longer exists fails test/architecture/test-files.test.ts.
set -euo pipefail
cd "$(dirname "$0")/.."

LONGEST_FIRST='
test/deployment/guarantees.test.ts
test/deployment/server.test.ts
test/contract/contract-tooling.test.ts
test/engines/posting/posting-crash.test.ts
test/cli/cli-keys.test.ts
test/deployment/cluster-start.test.ts
test/deployment/instances.test.ts
test/contract/breaking-change-gate.test.ts
test/deployment/cluster.test.ts
test/http/bad-values-property.test.ts
test/v2/v2-compare.test.ts
test/storage/maintenance-lock.test.ts
test/events/events-feed-processes.test.ts
test/http/slow-clients.test.ts
test/contract/declared-statuses.test.ts
test/contract/contract-examples.test.ts
test/v2/v2-bad-input.test.ts
test/db/seed-invariants.test.ts
test/contract/client-typescript.test.ts
test/http/auth-throttle.test.ts
test/events/webhook-secrets.test.ts
test/engines/posting/posting-deadline.test.ts
test/audit/audit-log.test.ts
test/engines/query/query-http.test.ts
test/storage/sqlite-connection.test.ts
test/events/events-feed.test.ts
test/catalog/mapping.test.ts
test/http/database-unavailable.test.ts
test/deployment/installed-schema-cluster.test.ts
test/engines/posting/posting-journal.test.ts
test/engines/posting/posting-inventory-allocations.test.ts
test/architecture/startup-imports.test.ts
test/engines/posting/posting-payroll.test.ts
test/deployment/warm-up.test.ts
'

all=$(find test -name '*.test.ts' | LC_ALL=C sort)
# Listed and present, in the listed order; then every other file, in name order.
printf '%s\n' $LONGEST_FIRST | grep -Fx -f <(printf '%s\n' $all) || true
printf '%s\n' $all | grep -Fvx -f <(printf '%s\n' $LONGEST_FIRST) || true
