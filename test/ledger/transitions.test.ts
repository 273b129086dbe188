/**
 * `writ verify` checks history, not only hashes (docs/protocol.md §17): ledgers made by random request
 * sequences through the in-process sidecar verify; every single-record mutation — re-sealed, the chain
 * re-linked, so only the history is wrong — that the §4 state machine (src/executions/machine.ts, the
 * sidecar's own rules, used here as the oracle) forbids fails with ILLEGAL_TRANSITION at that record,
 * and every other mutation still verifies. Seeded.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { DEFAULTS, type WritConfig } from '../../src/config/config.js';
import { isWritError } from '../../src/errors.js';
import {
  applyConfirmation,
  applyOutcome,
  applyReconcile,
  checkDecisionAllowed,
  checkEventsAllowed,
  stateAfterDecision,
  type Execution,
} from '../../src/executions/machine.js';
import { recordHash, ZERO_HASH } from '../../src/ledger/record.js';
import { verifyExportSync } from '../../src/ledger/verify.js';
import { startSidecar } from '../../src/server/serve.js';
import type { PdpServices } from '../../src/pdp/services.js';
import { jcs } from '../../src/util/canonical.js';
import { REPO } from '../helpers/server.js';

const SEED = 0x5e_17a1;
const RUNS = 6;
const ACTOR = { type: 'Agent', id: 'offboarding-agent-prod' };
const IDS = ['E-0', 'E-1', 'E-2', 'E-3'];
const PEP = { role: 'pep' as const, name: 'test-pep', actor: ACTOR };
const HR = { role: 'approver' as const, name: 'test-hr', principal: { type: 'User', id: 'hr-5519' } };
const RECONCILER = { role: 'reconciler' as const, name: 'test-reconciler' };

type Op =
  | { op: 'decide'; exec: number; phase: 'propose' | 'execute'; tool: 'read' | 'disable' }
  | { op: 'approve'; exec: number }
  | { op: 'outcome'; exec: number; status: 'committed' | 'rejected' | 'unknown' }
  | { op: 'reconcile'; exec: number; resolution: 'committed' | 'absent' }
  | { op: 'confirm'; exec: number }
  | { op: 'events'; exec: number; count: number }
  | { op: 'tick'; minutes: number };

const exec = fc.integer({ min: 0, max: IDS.length - 1 });
const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      op: fc.constant('decide' as const),
      exec,
      phase: fc.constantFrom('propose' as const, 'execute' as const),
      tool: fc.constantFrom('read' as const, 'disable' as const),
    }),
  },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('approve' as const), exec }) },
  {
    weight: 3,
    arbitrary: fc.record({ op: fc.constant('outcome' as const), exec, status: fc.constantFrom('committed' as const, 'rejected' as const, 'unknown' as const) }),
  },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('reconcile' as const), exec, resolution: fc.constantFrom('committed' as const, 'absent' as const) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('confirm' as const), exec }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('events' as const), exec, count: fc.integer({ min: 1, max: 3 }) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('tick' as const), minutes: fc.integer({ min: 1, max: 30 }) }) },
);

function body(i: number, phase: 'propose' | 'execute', tool: 'read' | 'disable'): string {
  return JSON.stringify({
    execution_id: IDS[i],
    phase,
    envelope: {
      task_id: `T-${i}`,
      purpose: 'scheduled_employee_offboarding',
      requester: { type: 'User', id: 'manager-1842' },
      actor: ACTOR,
      subject: { type: 'Employee', id: '7721' },
    },
    // Each execution its own call (no duplicate-consequence between them), whatever tool it asks.
    action:
      tool === 'read'
        ? { server: 'hris', tool: 'read_employee', arguments: { employee_id: '7721', n: i } }
        : { server: 'idp', tool: 'disable_sign_in', arguments: { employee_id: '7721', n: i } },
  });
}

async function run(sidecar: PdpServices, clockFile: string, ops: Op[]): Promise<void> {
  let clock = Date.parse('2026-08-24T10:30:00Z');
  writeFileSync(clockFile, new Date(clock).toISOString());
  const bound: Array<{ binding: string; envelope_digest: string } | undefined> = [];
  const tools: Array<'read' | 'disable'> = [];
  const tolerate = async <T>(p: Promise<T>): Promise<T | undefined> => {
    try {
      return await p;
    } catch (e) {
      if (!isWritError(e)) throw e;
      return undefined;
    }
  };
  for (const o of ops) {
    switch (o.op) {
      case 'decide': {
        const tool = (tools[o.exec] ??= o.tool);
        const r = await tolerate(sidecar.decisions.decide(PEP, body(o.exec, o.phase, tool)));
        if (r) bound[o.exec] = { binding: r.binding, envelope_digest: r.envelope_digest };
        break;
      }
      case 'approve':
        if (bound[o.exec])
          await tolerate(
            sidecar.approvals.approve(
              HR,
              JSON.stringify({ actor: ACTOR, execution_id: IDS[o.exec], ...bound[o.exec], expires_at: new Date(clock + 3600_000).toISOString() }),
            ),
          );
        break;
      case 'outcome':
        await tolerate(sidecar.executions.outcome(PEP, IDS[o.exec]!, JSON.stringify({ status: o.status })));
        break;
      case 'reconcile':
        await tolerate(sidecar.executions.reconcile(ACTOR, IDS[o.exec]!, JSON.stringify({ resolution: o.resolution, evidence_ref: 'ticket:1' }), RECONCILER));
        break;
      case 'confirm':
        await tolerate(sidecar.executions.confirm(ACTOR, IDS[o.exec]!, JSON.stringify({ evidence_ref: 'sor:1' }), RECONCILER));
        break;
      case 'events':
        await tolerate(
          sidecar.executions.events(
            PEP,
            IDS[o.exec]!,
            JSON.stringify({ events: Array.from({ length: o.count }, (_, k) => ({ type: `step.${k}`, data: { k } })) }),
          ),
        );
        break;
      case 'tick':
        clock += o.minutes * 60_000;
        writeFileSync(clockFile, new Date(clock).toISOString());
        break;
    }
  }
}

type Rec = Record<string, unknown> & { kind: string; seq: number };

/** The oracle: the sidecar's own state machine over the records in order; the seq of the first it forbids. */
function firstForbidden(records: Rec[]): number | undefined {
  const executions = new Map<string, Execution>();
  for (const r of records) {
    if (
      typeof r.execution_id !== 'string' ||
      r.actor === undefined ||
      !['decision', 'outcome', 'reconciliation', 'confirmation', 'event', 'approval'].includes(r.kind)
    )
      continue;
    const key = `${jcs(r.actor)}\n${r.execution_id}`;
    const e = executions.get(key);
    try {
      switch (r.kind) {
        case 'decision': {
          const phase = r.phase as 'propose' | 'execute';
          if (e) checkDecisionAllowed(e, { phase, binding: e.binding, envelope_digest: e.envelope_digest });
          const state = stateAfterDecision(phase, r.decision as 'allow');
          if (r.state !== state) return r.seq;
          executions.set(key, {
            ...(e ?? {
              execution_id: r.execution_id,
              actor: ACTOR,
              binding: '',
              envelope_digest: '',
              subject: ACTOR,
              server: '',
              tool: '',
              approvals: [],
              records: [],
            }),
            state,
            since: 'x',
          });
          break;
        }
        case 'approval':
          if (e?.state !== 'proposed') return r.seq;
          break;
        case 'event':
          if (!e) return r.seq;
          checkEventsAllowed(e);
          break;
        case 'outcome':
          if (!e) return r.seq;
          executions.set(key, applyOutcome(e, r.status as 'committed', r.confirmation as 'tool_reported'));
          break;
        case 'reconciliation':
          if (!e) return r.seq;
          // Whether it was invoking long enough is the sidecar's to judge by its clock; the ledger shows the state.
          executions.set(key, applyReconcile({ ...e, since: '1970-01-01T00:00:00Z' }, r.resolution as 'committed', { now: new Date(8.64e15), stuckAfterS: 0 }));
          break;
        case 'confirmation':
          if (!e) return r.seq;
          executions.set(key, applyConfirmation(e));
          break;
      }
    } catch (err) {
      if (isWritError(err)) return r.seq;
      throw err;
    }
  }
  return undefined;
}

/** The records with one changed and every hash and prev after it recomputed: only the history differs. */
function resealed(records: Rec[], at: number, change: (r: Rec) => Rec): string[] {
  let prev = at === 0 ? ZERO_HASH : (records[at - 1]!.hash as string);
  const out = records.slice(0, at).map((r) => jcs(r));
  for (let i = at; i < records.length; i++) {
    const base = i === at ? change({ ...records[i]! }) : { ...records[i]! };
    const { hash: _hash, ...rest } = base;
    const sealed = { ...rest, prev };
    const hash = recordHash(sealed);
    out.push(jcs({ ...sealed, hash }));
    prev = hash;
  }
  return out;
}

/** Single-record mutations of a record that names an execution. */
function mutationsOf(r: Rec): Array<[string, (r: Rec) => Rec]> {
  const m: Array<[string, (r: Rec) => Rec]> = [];
  for (const id of IDS) if (id !== r.execution_id) m.push([`execution_id → ${id}`, (x) => ({ ...x, execution_id: id })]);
  if (r.kind === 'decision') {
    m.push(['phase flipped', (x) => ({ ...x, phase: x.phase === 'execute' ? 'propose' : 'execute' })]);
    m.push(['an allow the other way', (x) => ({ ...x, decision: x.decision === 'allow' ? 'deny' : 'allow' })]);
    m.push(['allowed execute', (x) => ({ ...x, phase: 'execute', decision: 'allow', state: 'invoking' })]);
    m.push(['denied propose', (x) => ({ ...x, phase: 'propose', decision: 'deny', state: 'proposed' })]);
  }
  if (r.kind === 'outcome') for (const s of ['committed', 'rejected', 'unknown']) if (s !== r.status) m.push([`status → ${s}`, (x) => ({ ...x, status: s })]);
  if (r.kind === 'outcome' && r.status === 'committed')
    m.push(['confirmed by the system of record at once', (x) => ({ ...x, confirmation: 'system_of_record' })]);
  return m;
}

test('random request sequences verify; every re-sealed single-record mutation §4 forbids is ILLEGAL_TRANSITION', async () => {
  let mutated = 0;
  let illegal = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(op, { minLength: 15, maxLength: 40 }), async (ops) => {
      const dir = mkdtempSync(join(tmpdir(), 'writ-transitions-'));
      const clockFile = join(dir, 'now');
      const config: WritConfig = {
        ...DEFAULTS,
        tokens: [],
        listen: '127.0.0.1:0',
        policy_dir: join(REPO, 'policies'),
        data_dir: join(dir, 'data'),
        clock_file: clockFile,
        // No checkpoint inside the export: a re-sealed chain is then wrong only in its history.
        checkpoint: { every_records: 1_000_000, every_ms: 3_600_000 },
        stuck_after_s: 600,
      };
      writeFileSync(clockFile, '2026-08-24T10:30:00Z');
      const running = await startSidecar(config, { devTokens: false, log: () => undefined });
      const lines: string[] = [];
      try {
        await run(running.pdp, clockFile, ops);
        for await (const line of running.pdp.core.store.exportLines()) lines.push(line);
      } finally {
        await running.close();
        rmSync(dir, { recursive: true, force: true });
      }
      assert.deepEqual(verifyExportSync(lines), { ok: true, records: lines.length, head: JSON.parse(lines.at(-1)!).hash });
      const records = lines.map((l) => JSON.parse(l) as Rec);
      assert.equal(firstForbidden(records), undefined, 'the sidecar wrote a history its own machine forbids');
      for (const [at, r] of records.entries()) {
        if (typeof r.execution_id !== 'string') continue;
        for (const [what, change] of mutationsOf(r)) {
          const text = resealed(records, at, change);
          const expected = firstForbidden(text.map((l) => JSON.parse(l) as Rec));
          const verdict = verifyExportSync(text);
          mutated++;
          if (expected === undefined) {
            assert.equal(verdict.ok, true, `seq ${at} ${what}: ${JSON.stringify(verdict)}`);
          } else {
            illegal++;
            assert.deepEqual(
              { ok: verdict.ok, seq: (verdict as { seq?: number }).seq, code: (verdict as { code?: string }).code },
              { ok: false, seq: expected, code: 'ILLEGAL_TRANSITION' },
              `seq ${at} ${what}`,
            );
          }
        }
      }
    }),
    { seed: SEED, numRuns: RUNS, endOnFailure: true },
  );
  assert.ok(illegal > 20, `only ${illegal} of ${mutated} mutations broke §4`);
  process.stdout.write(`# ${mutated} re-sealed mutations, ${illegal} of them illegal transitions\n`);
});
