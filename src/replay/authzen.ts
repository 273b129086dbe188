/**
 * AuthZEN decision records (docs/protocol.md §10: kind `decision`, `api: "authzen"`, no execution_id,
 * naming subject, action and resource, with the admitted AuthZEN `context`) in a replay.
 *
 * Re-deciding one exactly uses what the live AuthZEN path uses: its request mapping
 * (`src/authzen/request.ts` `requestInputOf`: properties added under the stored attributes as they
 * stood, an entity missing from the store built from its properties alone) and the engine's
 * `evaluateRequest`.
 */
import { WritError } from '../errors.js';
import { admitValue, type Json, type LosslessValue } from '../binding/index.js';
import type { EntitySource } from '../policy/entities.js';
import type { PolicyEngine } from '../policy/engine.js';
import { requestInputOf, type AuthzenEvaluation } from '../authzen/request.js';
import type { RecordedDecision } from './request.js';
import { errorTexts } from './diff.js';

export function isAuthzenDecision(record: Record<string, unknown>): boolean {
  return record.kind === 'decision' && record.api === 'authzen' && record.search === undefined;
}

type Evaluation = AuthzenEvaluation;

/** Re-decides one AuthZEN record against the entities as they stood. */
export type AuthzenDecider = (record: Record<string, unknown>, entities: EntitySource) => RecordedDecision & { errors?: string[] };

/** The live AuthZEN path's decider for `engine` (kept async: callers await it). */
export async function authzenDecider(engine: PolicyEngine): Promise<AuthzenDecider | undefined> {
  return (record, entities) => {
    const outcome = engine.evaluateRequest(requestInputOf(evaluationOf(record), entities));
    return { decision: outcome.decision, reasons: outcome.reasons, errors: errorTexts(outcome.errors) };
  };
}

function bad(record: Record<string, unknown>, message: string): WritError {
  return new WritError('INVALID_REQUEST', `seq ${String(record.seq)}: ${message}`);
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A stored admitted object (context, properties), admitted again so a forged record cannot smuggle a Cedar escape. */
function admitted(record: Record<string, unknown>, value: unknown, where: string): { [k: string]: Json } {
  if (!isObject(value)) throw bad(record, `${where}: expected an object`);
  try {
    return admitValue(value as LosslessValue, where) as { [k: string]: Json };
  } catch (e) {
    throw bad(record, `${where} is not admissible: ${(e as Error).message}`);
  }
}

function entityOf(record: Record<string, unknown>, field: 'subject' | 'resource'): Evaluation['subject'] {
  const value = record[field];
  if (!isObject(value) || typeof value.type !== 'string' || typeof value.id !== 'string') throw bad(record, `the AuthZEN record has no ${field}`);
  const entity: Evaluation['subject'] = { type: value.type, id: value.id };
  if (value.properties !== undefined) entity.properties = admitted(record, value.properties, `/${field}/properties`);
  return entity;
}

/** The admitted evaluation an AuthZEN record holds (subject, action, resource, context as recorded). */
export function evaluationOf(record: Record<string, unknown>): Evaluation {
  const action = record.action;
  if (!isObject(action) || typeof action.name !== 'string') throw bad(record, 'the AuthZEN record has no action');
  return {
    path: '',
    subjectPath: '/subject',
    subject: entityOf(record, 'subject'),
    action: { name: action.name, ...(action.properties !== undefined ? { properties: admitted(record, action.properties, '/action/properties') } : {}) },
    resource: entityOf(record, 'resource'),
    context: record.context === undefined ? {} : admitted(record, record.context, '/context'),
  };
}
