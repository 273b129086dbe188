/**
 * Pruning an AuthZEN subject or resource search (docs/protocol.md §15) with Cedar's partial evaluation:
 * the request is reduced once per page with the searched member unknown (PolicyEngine.searchProgram),
 * and what is left is evaluated here on each candidate, in JavaScript, instead of one Cedar call each.
 *
 * Exact, never approximate: a candidate's answer here is the one the engine would give it.
 *   - Cedar denies whatever the open member is ('none allowed'): no candidate is true (an error could
 *     only deny too), and none is evaluated but the known member's own uid (below).
 *   - Else each candidate's residual is evaluated (residual.ts) with the unknown bound to the candidate
 *     and the candidate's entity read as the engine reads it (the stored entity, the request's
 *     properties over it, its parents for `in`): true when a permit holds and no forbid does. Every
 *     policy of the program is evaluated, so a policy that would error anywhere (a missing attribute, a
 *     type mismatch), or any expression residual.ts does not evaluate, makes the candidate undecided
 *     here: the engine then evaluates it, and its answer, errors included, is Cedar's.
 *   - A candidate with the known member's own uid (a user searching who may read that very user) is
 *     always left to the engine, even when nothing else can be allowed: Cedar sees one entity for both
 *     members there, with both members' properties, which the reduction, made with the known member
 *     alone, does not.
 * The order, the pages and the next_token are those of one-by-one evaluation: pruning changes what a
 * candidate costs, never which candidates a page passes over.
 */
import { uidKey, type Uid } from '../util/uid.js';
import type { EntityJson, EntitySource } from './entities.js';
import { EntityValue, satisfiedBy, type ResidualProgram } from './residual.js';

/**
 * A candidate's answer: true (allowed), false (not allowed), undefined (evaluate it with the engine).
 * `requestEntities` are the entities the request brings for this candidate (its own properties over its
 * stored entity, the known member's), as the engine's RequestInput holds them; `store` the trusted store.
 */
export type CandidateJudge = (candidate: Uid, requestEntities: readonly EntityJson[], store: EntitySource) => boolean | undefined;

/**
 * The judge of a search's candidates from its reduction (PolicyEngine.searchProgram); undefined when
 * there is none (every candidate goes to the engine). `known` is the member that is not searched.
 */
export function candidateJudgeOf(
  program: ResidualProgram | 'none allowed' | undefined,
  open: 'principal' | 'resource',
  known: Uid,
): CandidateJudge | undefined {
  if (program === undefined) return undefined;
  const knownKey = uidKey(known);
  return (candidate, requestEntities, store) => {
    if (uidKey(candidate) === knownKey) return undefined;
    if (program === 'none allowed') return false;
    const lookup = (type: string, id: string): EntityJson | undefined => {
      for (const e of requestEntities) if (e.uid.type === type && e.uid.id === id) return e;
      return store.get(uidKey({ type, id }));
    };
    const satisfied = satisfiedBy(program, { [open]: new EntityValue(candidate.type, candidate.id) }, lookup);
    if (satisfied === undefined) return undefined;
    return satisfied.forbids.length === 0 && satisfied.permits.length > 0;
  };
}
