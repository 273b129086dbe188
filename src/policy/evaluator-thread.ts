/**
 * The body of an evaluator thread (see evaluator-pool.ts): holds a PolicyEngine per loaded policy
 * version and answers decisions on the entity slice it is sent. Messages on one port arrive in order,
 * so a version's `load` always precedes the decisions that name it.
 */
import { parentPort } from 'node:worker_threads';
import { PolicyEngine, type DecisionOutcome } from './engine.js';
import { StaticEntitySource } from './entities.js';
import type { EvaluationJob, EvaluatorRequest, EvaluatorReply } from './evaluator-pool.js';

/** The engines the pool has sent and not yet dropped (it drops old ones after reloads). */
const engines = new Map<string, PolicyEngine>();

function answer(request: EvaluationJob): DecisionOutcome {
  const engine = engines.get(request.engineId);
  if (engine === undefined) {
    // Cannot happen: the pool sends `load` before, and `unload` only after, every decision naming it.
    // Were it to, refuse rather than guess.
    return { decision: 'deny', reasons: [], errors: [{ message: `evaluator thread has no policy set ${request.engineId}` }], obligations: [] };
  }
  if ('call' in request) return engine.evaluateCall(request.call);
  const entities = new StaticEntitySource(request.entities);
  if ('request' in request) return engine.evaluateRequest({ ...request.request, requestEntities: [], entities });
  return engine.evaluate({ ...request.input, entities });
}

parentPort!.on('message', (message: EvaluatorRequest) => {
  if (message.type === 'load') {
    engines.set(message.engineId, new PolicyEngine(message.bundle));
    return;
  }
  if (message.type === 'unload') {
    engines.delete(message.engineId);
    return;
  }
  const reply: EvaluatorReply = [];
  for (const request of message.batch) reply.push({ id: request.id, outcome: answer(request) });
  parentPort!.postMessage(reply);
});
