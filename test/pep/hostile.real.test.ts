// The hostile-server suite against the real sidecar (`writ serve`, test/pep/policies); see hostile-suite.ts.
import { after, before, test } from 'node:test';
import { startBackend, type Backend } from './backends.js';
import { MODES, runHostileMode } from './hostile-suite.js';

let b: Backend;
before(async () => {
  b = await startBackend('real');
});
after(async () => {
  await b?.stop();
});

for (const spec of MODES) {
  test(`hostile server behind writ proxy (real PDP): ${spec.mode}`, { timeout: 30_000 }, async () => {
    await runHostileMode(b, spec, 'real');
  });
}
