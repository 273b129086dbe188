// The entity store rebuilt from entity records: upserts, deletions (entities.json edits), and earlier
// versions reached by undoing recent changes, within the undo window only.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { entitiesVersionOf, type EntityJson } from '../../src/policy/entities.js';
import { EMPTY_ENTITIES_VERSION, EntityTimeline } from '../../src/replay/entity-timeline.js';
import { uidKey } from '../../src/util/uid.js';

const role = (id: string): EntityJson => ({ uid: { type: 'Role', id }, attrs: {}, parents: [] });
const user = (id: string, parent: string, name = id): EntityJson => ({ uid: { type: 'User', id }, attrs: { name }, parents: [{ type: 'Role', id: parent }] });

/** Applies a batch of changes as the sidecar ledgers them: every record carries the batch's resulting version. */
function applyBatch(t: EntityTimeline, state: Map<string, EntityJson>, changes: Array<{ entity: EntityJson; deleted?: boolean }>): string {
  for (const { entity, deleted } of changes) {
    if (deleted) state.delete(uidKey(entity.uid));
    else state.set(uidKey(entity.uid), entity);
  }
  const version = entitiesVersionOf([...state.values()]);
  for (const { entity, deleted } of changes)
    t.apply({ uid: entity.uid, ...(deleted ? { deleted: true } : { attrs: entity.attrs, parents: entity.parents }), entities_version: version });
  return version;
}

test('upserts, deletions and earlier versions', () => {
  const t = new EntityTimeline();
  const state = new Map<string, EntityJson>();
  assert.equal(t.version, EMPTY_ENTITIES_VERSION);
  const seeded = applyBatch(t, state, [{ entity: role('hr') }, { entity: user('a', 'hr') }, { entity: user('b', 'hr') }]);
  const renamed = applyBatch(t, state, [{ entity: user('a', 'hr', 'Ann') }]);
  const removed = applyBatch(t, state, [{ entity: user('b', 'hr'), deleted: true }]);
  assert.equal(t.version, removed);
  assert.equal(t.at(removed)!.get('User::"b"'), undefined);
  assert.equal((t.at(removed)!.get('User::"a"')!.attrs as { name: string }).name, 'Ann');
  // Earlier states, as overlays.
  assert.equal((t.at(renamed)!.get('User::"b"')!.attrs as { name: string }).name, 'b');
  assert.equal((t.at(seeded)!.get('User::"a"')!.attrs as { name: string }).name, 'a');
  assert.equal(t.at(EMPTY_ENTITIES_VERSION)!.get('Role::"hr"'), undefined);
  for (const v of [seeded, renamed, removed, EMPTY_ENTITIES_VERSION]) assert.equal(entitiesVersionOf(t.entitiesAt(v)!), v);
  assert.equal(t.at('sha256:unknown'), undefined);
});

test('only the last `window` changes can be undone', () => {
  const t = new EntityTimeline(2);
  const state = new Map<string, EntityJson>();
  const v1 = applyBatch(t, state, [{ entity: role('a') }]);
  const v2 = applyBatch(t, state, [{ entity: role('b') }]);
  const v3 = applyBatch(t, state, [{ entity: role('c') }]);
  assert.equal(t.at(v3)?.version, v3);
  assert.ok(t.at(v2));
  assert.ok(t.at(v1));
  assert.equal(t.at(EMPTY_ENTITIES_VERSION), undefined, 'three changes back is beyond a window of 2');
});
