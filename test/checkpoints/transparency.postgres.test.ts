// The §16 suite, unchanged, on a fresh PostgreSQL database per server (WRIT_TEST_STORE in test/helpers/server.ts).
process.env.WRIT_TEST_STORE = 'postgres';
await import('./transparency.test.js');
