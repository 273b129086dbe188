// The real filesystem and memory MCP servers behind writ proxy, against the fake PDP (its policy
// mirrors test/pep/policies/pep.cedar); see real-servers-suite.ts.
import { after, before, test } from 'node:test';
import { startBackend, type Backend } from './backends.js';
import { runFilesystem, runMemory } from './real-servers-suite.js';

let b: Backend;
before(async () => {
  b = await startBackend('fake');
});
after(async () => {
  await b.stop();
});

test('server-filesystem behind writ proxy (fake PDP)', { timeout: 60_000 }, () => runFilesystem(b, 'fake'));
test('server-memory behind writ proxy (fake PDP)', { timeout: 60_000 }, () => runMemory(b, 'fake'));
