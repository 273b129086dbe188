// The store matrix (docs/protocol.md §9): the decision-path suites, unchanged, with every server on a
// fresh PostgreSQL database instead of LMDB (see WRIT_TEST_STORE in test/helpers/server.ts).
process.env.WRIT_TEST_STORE = 'postgres';
await import('./decisions.test.js');
await import('./offboarding-story.test.js');
await import('./restart.test.js');
await import('./contract-review.test.js');
