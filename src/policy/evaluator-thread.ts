/**
 * The body of an evaluator thread (see evaluator-pool.ts): holds a PolicyEngine per loaded policy
 * version and answers decisions on the entity slice it is sent. Messages on one port arrive in order,
 * so a version's `load` always precedes the decisions that name it.
 */
import { parentPort } from 'node:worker_threads';
import { PolicyEngine, type DecisionOutcome } from './engine.js';
import { StaticEntitySource } from './entities.js';
import type { DecideRequest, EvaluatorRequest, EvaluatorReply } from './evaluator-pool.js';

/** Recent versions only: decisions in flight during a reload may still name the previous one. */
const KEEP_VERSIONS = 4;
const engines = new Map<string, PolicyEngine>();

function answer(request: DecideRequest): DecisionOutcome {
  const engine = engines.get(request.engineId);
  if (engine === undefined) {
    // Cannot happen while the pool sends `load` first; if it does, refuse rather than guess.
    return { decision: 'deny', reasons: [], errors: [{ message: `evaluator thread has no policy set ${request.engineId}` }], obligations: [] };
  }
  return engine.decide({ ...request.input, entities: new StaticEntitySource(request.entities) });
}

parentPort!.on('message', (message: EvaluatorRequest) => {
  if (message.type === 'load') {
    engines.set(message.engineId, new PolicyEngine(message.bundle));
    while (engines.size > KEEP_VERSIONS) engines.delete(engines.keys().next().value!);
    return;
  }
  const reply: EvaluatorReply = [];
  for (const request of message.batch) reply.push({ id: request.id, outcome: answer(request) });
  parentPort!.postMessage(reply);
});
