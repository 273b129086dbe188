// The §16 witnesses suite, unchanged, on a fresh PostgreSQL database (WRIT_TEST_STORE in test/helpers/server.ts):
// the cosignatures are kept in the store's state, so this checks them on the shared store too.
process.env.WRIT_TEST_STORE = 'postgres';
await import('./witnesses.test.js');
