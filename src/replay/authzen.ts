/**
 * AuthZEN decision records (CONTRACT.md §10: kind `decision`, `api: "authzen"`, no execution_id,
 * naming subject, action and resource, with the AuthZEN `context`) in a replay.
 *
 * Re-deciding one exactly needs the engine's AuthZEN entry (the §10 mapping: principal/action/resource
 * from the request, `properties` merged under the stored attributes, an entity missing from the store
 * built from its properties alone). This build's engine (src/policy/engine.ts) has no such entry yet,
 * so replay counts these records as not replayed and says so, rather than guess at a mapping that
 * could differ from the live one. When the engine gains the entry, `replayAuthzenDecision` is the one
 * place to call it.
 */
import type { EntitySource } from '../policy/entities.js';
import type { PolicyEngine } from '../policy/engine.js';
import type { RecordedDecision } from './request.js';

export function isAuthzenDecision(record: Record<string, unknown>): boolean {
  return record.kind === 'decision' && record.api === 'authzen';
}

/** The candidate decision of an AuthZEN record, or undefined when this build cannot re-decide it. */
export function replayAuthzenDecision(_engine: PolicyEngine, _record: Record<string, unknown>, _entitiesAtRecord: () => EntitySource): RecordedDecision | undefined {
  return undefined;
}
