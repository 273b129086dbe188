// The hostile-server suite against the fake PDP (test/pep/fake-pdp.ts); see hostile-suite.ts.
import { after, before, test } from 'node:test';
import { startBackend, type Backend } from './backends.js';
import { MODES, runHostileMode } from './hostile-suite.js';

let b: Backend;
before(async () => {
  b = await startBackend('fake');
});
after(async () => {
  await b.stop();
});

for (const spec of MODES) {
  test(`hostile server behind writ proxy (fake PDP): ${spec.mode}`, { timeout: 30_000 }, async () => {
    await runHostileMode(b, spec, 'fake');
  });
}
