// The real filesystem and memory MCP servers behind writ proxy, against the real sidecar
// (`writ serve` with test/pep/policies, Cedar); see real-servers-suite.ts.
import { after, before, test } from 'node:test';
import { startBackend, type Backend } from './backends.js';
import { runFilesystem, runMemory } from './real-servers-suite.js';

let b: Backend;
before(async () => {
  b = await startBackend('real');
});
after(async () => {
  await b?.stop();
});

test('server-filesystem behind writ proxy (real PDP)', { timeout: 60_000 }, () => runFilesystem(b, 'real'));
test('server-memory behind writ proxy (real PDP)', { timeout: 60_000 }, () => runMemory(b, 'real'));
