/**
 * The floors of src/ and the direction imports may run (issue 26; decision 0310). Each floor
 * imports only the floors below it:
 *
 *   entry points   main.ts, server.ts, cluster.ts, cli/ (and what only a start runs: boot.ts,
 *                  warm-up.ts, heap-limit.ts; connection-handoff.ts, the cluster's port)
 *   surface        app.ts -> v2/ -> http/   (v2 is a wing over http: it reuses http's validator,
 *                  error classification and utility routes; http never imports v2)
 *   services       services.ts (built once at start, handed to the surface)
 *   engines        events/ and engines/ (events read through engines/query; engines never call events)
 *   storage        storage/ (the only place that talks SQL and knows the engine)
 *   ground         catalog/, errors/, auth/, telemetry/, config.ts
 *
 * db/ (migrations, their names, the demo seed) uses storage, so it stands above it: only the entry
 * points and services.ts import it, and the seed only lazily at start.
 *
 * `make check-layers` runs this (and `make test` runs that); a violation fails the build and
 * names its rule. test/architecture/layers.test.ts proves each rule fails on a known-bad import.
 * Type-only imports count (tsPreCompilationDeps): a type is an arrow too.
 */

const ENTRY = '^src/(main|server|cluster|connection-handoff|boot|warm-up|heap-limit)\\.ts$|^src/cli/';
const APP = '^src/app\\.ts$';
const V2 = '^src/v2/';
const HTTP = '^src/http/';
const SURFACE = `${APP}|${V2}|${HTTP}`;
const SERVICES = '^src/services\\.ts$';
const ENGINES = '^src/(engines|events)/';
const STORAGE = '^src/storage/';
const GROUND = '^src/(catalog|errors|auth|telemetry)/|^src/config\\.ts$';

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'No module may reach itself through its imports: a circle has no floor to stand on.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'no-bench-in-src',
      comment: 'The service never loads a benchmark.',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^bench/' },
    },
    {
      name: 'no-seed-in-src',
      comment:
        'The demo seed is data for `make run` and tests, not part of the service: only boot.ts may load it, lazily (seed-only-lazily-at-start).',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/boot\\.ts$' },
      to: { path: '^db/seed/' },
    },
    {
      name: 'seed-only-lazily-at-start',
      comment:
        'boot.ts seeds an empty embedded database (SEED_ON_START) through import() only, so a start on a seeded database never loads the seed (test/architecture/startup-imports.test.ts).',
      severity: 'error',
      from: { path: '^src/boot\\.ts$' },
      to: { path: '^db/seed/', dependencyTypesNot: ['dynamic-import'] },
    },
    {
      name: 'db-only-from-start-and-services',
      comment:
        'db/ (migrations, their names, the demo seed) is above storage, which it uses: a start (boot.ts) and the keys command run the migrations, and the composition roots (boot.ts, services.ts) hand their names to storage. Nothing else in src imports db/.',
      severity: 'error',
      from: { path: '^src/', pathNot: `${ENTRY}|${SERVICES}` },
      to: { path: '^db/' },
    },
    {
      name: 'surface-not-up',
      comment: 'app.ts, http/ and v2/ are started by the entry points; they never import one.',
      severity: 'error',
      from: { path: SURFACE },
      to: { path: ENTRY },
    },
    {
      name: 'v2-not-up',
      comment: 'The v2 wing is mounted by app.ts; it never imports it.',
      severity: 'error',
      from: { path: V2 },
      to: { path: APP },
    },
    {
      name: 'http-not-up',
      comment: 'http/ is the floor under app.ts and the v2 wing: it never imports either (the v2 names and routes live in src/v2).',
      severity: 'error',
      from: { path: HTTP },
      to: { path: `${APP}|${V2}` },
    },
    {
      name: 'surface-talks-no-sql',
      comment:
        'The HTTP surface renders: it asks services and engines, and takes only types from storage (Services hands it the storage pieces it needs).',
      severity: 'error',
      from: { path: SURFACE },
      to: { path: STORAGE, dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'services-not-up',
      comment: 'services.ts is built by the entry points and handed to the surface; it imports neither.',
      severity: 'error',
      from: { path: SERVICES },
      to: { path: `${ENTRY}|${SURFACE}` },
    },
    {
      name: 'engines-not-up',
      comment: 'Engines and events decide; they never import services.ts, the surface or an entry point.',
      severity: 'error',
      from: { path: ENGINES },
      to: { path: `${ENTRY}|${SURFACE}|${SERVICES}` },
    },
    {
      name: 'engines-never-call-events',
      comment: 'Change events are a wing of their own: the detector finds changes in the database; no engine calls it.',
      severity: 'error',
      from: { path: '^src/engines/' },
      to: { path: '^src/events/' },
    },
    {
      name: 'events-read-through-query',
      comment: 'Events read records through engines/query, never through a posting, match or idempotency module.',
      severity: 'error',
      from: { path: '^src/events/' },
      to: { path: '^src/engines/(posting|match|idempotency)/' },
    },
    {
      name: 'query-is-the-engines-floor',
      comment: 'engines/query is the read pipeline that match, posting and events build on; it imports no other engine.',
      severity: 'error',
      from: { path: '^src/engines/query/' },
      to: { path: '^src/engines/(?!query/)' },
    },
    {
      name: 'idempotency-below-posting',
      comment: 'The idempotency protocol wraps the posting runner; it knows no posting, match or query module.',
      severity: 'error',
      from: { path: '^src/engines/idempotency/' },
      to: { path: '^src/engines/(?!idempotency/)' },
    },
    {
      name: 'storage-not-up',
      comment: 'Storage talks SQL for the floors above; it imports none of them.',
      severity: 'error',
      from: { path: STORAGE },
      to: { path: `${ENTRY}|${SURFACE}|${SERVICES}|${ENGINES}` },
    },
    {
      name: 'ground-not-up',
      comment: 'catalog, errors, auth, telemetry and config are the ground: they import nothing above them (no storage, no engine).',
      severity: 'error',
      from: { path: GROUND },
      to: { path: `${ENTRY}|${SURFACE}|${SERVICES}|${ENGINES}|${STORAGE}` },
    },
    {
      name: 'errors-at-the-bottom',
      comment: 'The problem type, the code registry and the field-error collector import nothing else of src.',
      severity: 'error',
      from: { path: '^src/errors/' },
      to: { path: '^src/(?!errors/)' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    // Type-only imports are arrows too (the write side's circle runs through result types).
    tsPreCompilationDeps: true,
    moduleSystems: ['cjs', 'es6'],
  },
};
