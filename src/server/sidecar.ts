/**
 * The PDP as one object, for the callers that take it whole (the HTTP app, serve.ts, tests): the
 * decision core (src/pdp/core.ts) and its services, with their methods under one roof.
 *
 *   decisions    decide(), commitPending()                     src/pdp/decisions.ts
 *   executions   outcome(), reconcile(), confirm(), events(), queue(), getExecution()
 *                                                               src/pdp/executions.ts
 *   approvals    approve(), revoke(), pendingApprovals()        src/pdp/approvals.ts
 *   facts        putEntity(), getEntity()                       src/pdp/entities.ts
 *   policy       recordStartup(), reloadIfChanged()             src/pdp/policy-reload.ts
 *
 * Every write of a decision goes through pdp/commit.ts (commit with revalidation).
 */
import type { WritConfig } from '../config/config.js';
import type { PolicyBundle } from '../policy/load.js';
import type { LedgerStore } from '../store/types.js';
import { PdpCore } from '../pdp/core.js';
import { DecisionService } from '../pdp/decisions.js';
import { ExecutionService } from '../pdp/executions.js';
import { ApprovalService } from '../pdp/approvals.js';
import { EntityService } from '../pdp/entities.js';
import { PolicyReload } from '../pdp/policy-reload.js';

export { executionKey, type DecisionResponse } from '../pdp/admission.js';

export class Sidecar {
  readonly core: PdpCore;
  readonly decisions: DecisionService;
  readonly executions: ExecutionService;
  readonly approvals: ApprovalService;
  readonly facts: EntityService;
  readonly policy: PolicyReload;

  constructor(config: WritConfig, store: LedgerStore, bundle: PolicyBundle) {
    this.core = new PdpCore(config, store, bundle);
    this.decisions = new DecisionService(this.core);
    this.approvals = new ApprovalService(this.core);
    this.executions = new ExecutionService(this.core, this.approvals);
    this.facts = new EntityService(this.core);
    this.policy = new PolicyReload(this.core);
  }

  get config() {
    return this.core.config;
  }
  get store() {
    return this.core.store;
  }
  get engine() {
    return this.core.engine;
  }
  get evaluator() {
    return this.core.evaluator;
  }
  get bundle() {
    return this.core.bundle;
  }
  get entities() {
    return this.core.entities;
  }
  get executionStates() {
    return this.core.executionStates;
  }

  onPolicyChange(...a: Parameters<PdpCore['onPolicyChange']>) {
    return this.core.onPolicyChange(...a);
  }
  close() {
    return this.core.close();
  }
  countExecutionStates() {
    return this.core.countExecutionStates();
  }
  now() {
    return this.core.now();
  }

  recordStartup() {
    return this.policy.recordStartup();
  }
  reloadIfChanged() {
    return this.policy.reloadIfChanged();
  }

  decide(...a: Parameters<DecisionService['decide']>) {
    return this.decisions.decide(...a);
  }
  commitPending(...a: Parameters<DecisionService['commitPending']>) {
    return this.decisions.commitPending(...a);
  }

  outcome(...a: Parameters<ExecutionService['outcome']>) {
    return this.executions.outcome(...a);
  }
  reconcile(...a: Parameters<ExecutionService['reconcile']>) {
    return this.executions.reconcile(...a);
  }
  confirm(...a: Parameters<ExecutionService['confirm']>) {
    return this.executions.confirm(...a);
  }
  events(...a: Parameters<ExecutionService['events']>) {
    return this.executions.events(...a);
  }
  queue(...a: Parameters<ExecutionService['queue']>) {
    return this.executions.queue(...a);
  }
  getExecution(...a: Parameters<ExecutionService['getExecution']>) {
    return this.executions.getExecution(...a);
  }

  pendingApprovals(...a: Parameters<ApprovalService['pendingApprovals']>) {
    return this.approvals.pendingApprovals(...a);
  }
  approve(...a: Parameters<ApprovalService['approve']>) {
    return this.approvals.approve(...a);
  }
  revoke(...a: Parameters<ApprovalService['revoke']>) {
    return this.approvals.revoke(...a);
  }

  putEntity(...a: Parameters<EntityService['putEntity']>) {
    return this.facts.putEntity(...a);
  }
  getEntity(...a: Parameters<EntityService['getEntity']>) {
    return this.facts.getEntity(...a);
  }
}
