/**
 * The decision core and its services, made together once per sidecar (src/server/serve.ts, tests). The
 * HTTP route groups (src/http/routes/) and the fronts each take the service they need from here.
 *
 *   decisions    decide(), commitPending()                     decisions.ts
 *   executions   outcome(), reconcile(), confirm(), events(), queue(), getExecution()
 *                                                               executions.ts
 *   approvals    approve(), revoke(), pendingApprovals()        approvals.ts
 *   entities     putEntity(), getEntity()                       entities.ts
 *   policy       recordStartup(), reloadIfChanged()             policy-reload.ts
 *
 * Every write of a decision goes through commit.ts (commit with revalidation).
 */
import type { WritConfig } from '../config/config.js';
import type { PolicyBundle } from '../policy/load.js';
import type { LedgerStore } from '../store/types.js';
import { ApprovalService } from './approvals.js';
import { PdpCore } from './core.js';
import { DecisionService } from './decisions.js';
import { EntityService } from './entities.js';
import { ExecutionService } from './executions.js';
import { PolicyReload } from './policy-reload.js';

export interface PdpServices {
  readonly core: PdpCore;
  readonly decisions: DecisionService;
  readonly executions: ExecutionService;
  readonly approvals: ApprovalService;
  readonly entities: EntityService;
  readonly policy: PolicyReload;
}

export function pdpServices(config: WritConfig, store: LedgerStore, bundle: PolicyBundle): PdpServices {
  const core = new PdpCore(config, store, bundle);
  const approvals = new ApprovalService(core);
  return {
    core,
    decisions: new DecisionService(core),
    executions: new ExecutionService(core, approvals),
    approvals,
    entities: new EntityService(core),
    policy: new PolicyReload(core),
  };
}
