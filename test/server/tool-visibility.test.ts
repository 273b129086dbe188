// POST /v1/tools/visible's body (src/server/tool-visibility.ts visibleTools) as the validator narrows it:
// a delegated pep's envelope is completed from its identity token and read by its typed members; a body
// that is not an object is INVALID_REQUEST, whoever sends it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { visibleTools } from '../../src/server/tool-visibility.js';
import { PolicyEngine } from '../../src/policy/engine.js';
import { loadPolicyDir } from '../../src/policy/load.js';
import { StaticEntitySource } from '../../src/policy/entities.js';
import { isWritError } from '../../src/errors.js';
import type { Caller } from '../../src/identity/caller.js';
import { ENTITIES, tempPolicyDir } from '../policy/helpers.js';

const actor = { type: 'Agent', id: 'a1' };
const pep = { role: 'pep', actor } as Caller;
const delegated = { role: 'pep', actor, requester: { type: 'User', id: 'req' } } as Caller;
const envelope = { task_id: 'T', purpose: 'p', requester: { type: 'User', id: 'req' }, actor, subject: { type: 'Doc', id: 'd1' } };

test('visibleTools: typed members of the validated body; a delegated envelope completed; a non-object body refused', () => {
  const d = tempPolicyDir({ 'p.cedar': '@id("p-t") permit (principal, action == Action::"s/t", resource);' });
  try {
    const engine = new PolicyEngine(loadPolicyDir(d.dir));
    const entities = new StaticEntitySource(ENTITIES);
    const ask = (caller: Caller, body: unknown) => visibleTools(engine, entities, caller, JSON.stringify(body));
    assert.deepEqual(ask(pep, { envelope, server: 's', tools: ['t', 'u', 't'] }).visible, ['t']);
    const { requester: _r, actor: _a, ...withoutIdentity } = envelope;
    assert.deepEqual(ask(delegated, { envelope: withoutIdentity, server: 's', tools: ['t'], identity_token: 'x' }).visible, ['t']);
    for (const caller of [pep, delegated]) {
      for (const body of [null, [], 'text', 3]) {
        assert.throws(
          () => ask(caller, body),
          (e) => isWritError(e) && e.code === 'INVALID_REQUEST',
          `${JSON.stringify(body)} from ${caller.requester ? 'a delegated pep' : 'a pep'}`,
        );
      }
    }
    assert.throws(
      () => ask(pep, { envelope, server: 's', tools: ['t'], identity_token: 'x' }),
      (e) => isWritError(e) && e.code === 'INVALID_REQUEST' && e.path === '/identity_token',
    );
  } finally {
    d.cleanup();
  }
});
