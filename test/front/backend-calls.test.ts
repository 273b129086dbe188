// The one channel from an HTTP front's app to the ledger writer (src/front/backend-calls.ts), in-process
// against real services and a real LMDB store: a call answers what the service answers, a refusal crosses
// with its status and code, the export streams in pages, and nothing but the app's calls is callable.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { LmdbStore } from '../../src/store/lmdb/lmdb-store.js';
import type { PdpServices } from '../../src/pdp/services.js';
import { openPdp } from '../helpers/pdp.js';
import { AuthzenService } from '../../src/authzen/handler.js';
import { storeReadiness } from '../../src/http/routes/health.js';
import { answerCall, callingBackend, refusalOf, type BackendCall, type WriterBackend } from '../../src/front/backend-calls.js';
import { isWritError } from '../../src/errors.js';
import { offboardingBody } from '../helpers/server.js';

let store: LmdbStore;
let pdp: PdpServices;
let writer: WriterBackend;
/** The front's side wired to the writer's as the message link does: plain data both ways, refusals as status and body. */
const call = async (c: BackendCall): Promise<unknown> => {
  try {
    return structuredClone(await answerCall(writer, structuredClone(c)));
  } catch (e) {
    if (!isWritError(e)) throw e;
    throw refusalOf(e.status, e.toBody());
  }
};

let close: () => Promise<void>;
before(async () => {
  const opened = await openPdp('writ-backend-calls-');
  ({ store, pdp, close } = opened);
  const readiness = storeReadiness({ store, policyVersion: () => pdp.core.engine.policyVersion, ready: async () => true });
  writer = { pdp, authzen: new AuthzenService(pdp.core), readiness, notes: undefined };
});
after(() => close());

test("a call answers what the writer's service answers; a refusal keeps its status and code", async () => {
  const front = callingBackend(call, undefined);
  const caller = { role: 'pep' as const, name: 'test-pep', actor: { type: 'Agent', id: 'offboarding-agent-prod' } };
  const text = JSON.stringify(
    offboardingBody({ execution_id: 'BC-1', phase: 'execute', action: { server: 'hris', tool: 'read_employee', arguments: { employee_id: '7721' } } }),
  );
  const decided = await front.pdp.decisions.decide(caller, text);
  assert.equal(decided.execution_id, 'BC-1');
  const execution = await front.pdp.executions.getExecution(caller.actor, 'BC-1');
  assert.deepEqual(execution, await pdp.executions.getExecution(caller.actor, 'BC-1'));
  await assert.rejects(front.pdp.entities.getEntity('Employee', 'nobody-here'), (e: unknown) => isWritError(e) && e.code === 'NOT_FOUND' && e.status === 404);
  const probe = await front.readiness!.probe();
  assert.equal(probe.ready, true);
  assert.equal(probe.body.ledger_size, await store.size());
});

test('the export streams in pages, every line once and in order', async () => {
  const front = callingBackend(call, undefined);
  const size = await store.size();
  const lines: string[] = [];
  for await (const line of front.pdp.core.store.exportLines(0, size) as AsyncIterable<string>) lines.push(line);
  const direct: string[] = [];
  for (const line of store.exportLines(0, size)) direct.push(line);
  assert.deepEqual(lines, direct);
});

test('only what the app calls is callable', async () => {
  await assert.rejects(answerCall(writer, { target: 'store', method: 'close', args: [] }), /not callable/);
  await assert.rejects(answerCall(writer, { target: 'policy' as never, method: 'reloadIfChanged', args: [] }), /not callable/);
});
