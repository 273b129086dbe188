// Entity changes that reach the embedded store at once (docs/protocol.md §5): every acknowledged change
// is in force afterwards, each `entity` record names the entities_version of the ledger as it stands at
// that record, and an approval given while a change of its subject is landing binds one state of the
// subject, not a mix. In-process against the real sidecar and LMDB store.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { LmdbStore } from '../../src/store/lmdb/lmdb-store.js';
import type { PdpServices } from '../../src/pdp/services.js';
import { openPdp } from '../helpers/pdp.js';
import { entitiesVersionOf, type EntityJson } from '../../src/policy/entities.js';
import type { Caller } from '../../src/identity/caller.js';
import { offboardingBody } from '../helpers/server.js';

const PEP: Caller = { role: 'pep', name: 'test-pep', actor: { type: 'Agent', id: 'offboarding-agent-prod' } };
const HR: Caller = { role: 'approver', name: 'test-hr', principal: { type: 'User', id: 'hr-5519' } };
const ADMIN: Caller = { role: 'admin', name: 'test-admin' };

async function openSidecar(t: { after(fn: () => Promise<void> | void): void }): Promise<{ store: LmdbStore; sidecar: PdpServices }> {
  const opened = await openPdp('writ-entity-race-');
  t.after(() => opened.close());
  return { store: opened.store, sidecar: opened.pdp };
}

/**
 * The entities as the ledger's `entity` records leave them, checked against the version the records
 * name. The records of one change (the seed of entities.json is one) all name the version the whole
 * change produces, so the check is made after the last record of each run naming one version.
 */
async function replayEntities(store: LmdbStore): Promise<Array<{ seq: number; named: string; actual: string }>> {
  const held = new Map<string, EntityJson>();
  const records = [...store.exportLines()].map((l) => JSON.parse(l) as Record<string, any>).filter((r) => r.kind === 'entity');
  const out: Array<{ seq: number; named: string; actual: string }> = [];
  records.forEach((r, i) => {
    const key = `${r.uid.type}::${JSON.stringify(r.uid.id)}`;
    if (r.deleted) held.delete(key);
    else held.set(key, { uid: r.uid, attrs: r.attrs, parents: r.parents });
    if (records[i + 1]?.entities_version !== r.entities_version)
      out.push({ seq: r.seq, named: r.entities_version, actual: entitiesVersionOf([...held.values()]) });
  });
  return out;
}

test('concurrent admin changes of different entities: every acknowledged change is in force, and every entity record names the version it produces', async (t) => {
  const { store, sidecar } = await openSidecar(t);
  for (let round = 0; round < 5; round++) {
    const changes = Array.from({ length: 6 }, (_, i) => ({ type: 'Agent', id: `agent-${i}`, level: round * 10 + i }));
    await Promise.all(changes.map((c) => sidecar.entities.putEntity(ADMIN, c.type, c.id, JSON.stringify({ attrs: { level: c.level }, parents: [] }))));
    for (const c of changes) assert.deepEqual((await sidecar.entities.getEntity(c.type, c.id)).attrs, { level: c.level }, `${c.id} in round ${round}`);
  }
  for (const r of await replayEntities(store)) assert.equal(r.named, r.actual, `entity record ${r.seq} names the version the ledger gives`);
  assert.equal(sidecar.core.entities.version, (await replayEntities(store)).at(-1)!.actual, "the live entities are the ledger's");
});

test('an approval given while a change of its subject lands binds the subject as it is after that change (it stays valid)', async (t) => {
  const { sidecar } = await openSidecar(t);
  const body = offboardingBody({ execution_id: 'OFF-9100:disable' });
  const proposed = await sidecar.decisions.decide(PEP, JSON.stringify(body));
  const subject = await sidecar.entities.getEntity('Employee', '7721');
  const approval = JSON.stringify({
    actor: body.envelope.actor,
    execution_id: body.execution_id,
    binding: proposed.binding,
    envelope_digest: proposed.envelope_digest,
    expires_at: new Date(Date.now() + 3_600_000).toISOString(),
  });
  // The change is staged (in the store's open batch, not durable yet) when the approval is written.
  const change = sidecar.entities.putEntity(
    ADMIN,
    'Employee',
    '7721',
    JSON.stringify({ attrs: { ...subject.attrs, note: 'changed' }, parents: subject.parents }),
  );
  for (let i = 0; i < 1000 && sidecar.core.entities.settled; i++) await Promise.resolve();
  assert.equal(sidecar.core.entities.settled, false, 'the change is staged and not yet durable');
  const given = sidecar.approvals.approve(HR, approval);
  await change;
  const { approval_id } = (await given) as { approval_id: string };
  const view = (await sidecar.executions.getExecution(PEP.actor!, body.execution_id)) as {
    approvals: Array<{ approval_id: string; valid: boolean; invalid_reason?: string }>;
  };
  const mine = view.approvals.find((a) => a.approval_id === approval_id)!;
  assert.equal(mine.valid, true, `the approval was given after the change it follows: ${JSON.stringify(mine)}`);
});
