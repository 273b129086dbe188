// The store matrix (docs/protocol.md §9): the PEP hostile-server suite against the real sidecar on PostgreSQL.
process.env.WRIT_TEST_STORE = 'postgres';
await import('./hostile.real.test.js');
