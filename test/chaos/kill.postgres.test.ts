// The store matrix (docs/protocol.md §9, issue 13): the chaos suites, unchanged, with every server on a
// fresh PostgreSQL database instead of LMDB (see WRIT_TEST_STORE in test/helpers/server.ts). Tests
// that are about the LMDB files themselves skip on PostgreSQL and say why.
process.env.WRIT_TEST_STORE = 'postgres';
// Fewer kill rounds than on LMDB (6) keep the added time modest; CHAOS_KILLS still overrides.
process.env.CHAOS_KILLS ??= '3';
await import('./kill.test.js');
await import('./faults.test.js');
await import('./integrity.test.js');
await import('./limits.test.js');
