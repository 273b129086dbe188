/**
 * HTTP front threads (issue 14) against the real server: the fronts on the public port must answer
 * exactly as the sidecar alone does (http_threads: 0) — same decisions, states, records and refusals —
 * never with a stale policy set or stale entities, with one reservation per execution id however many
 * fronts race for it, every other route passed through unchanged (streaming, 405, 401, 413 with a
 * lingering close), no silently shared port, and a SIGTERM that loses no acknowledged decision.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { call, decide, offboardingBody, readEmployeeBody, REPO, startTestServer, type TestServer } from '../helpers/server.js';
import { until } from '../helpers/wait.js';
import { rawExchange } from '../helpers/raw-http.js';
import { approvalOf, offboardingEmployee } from '../helpers/offboarding.js';
import { pinnedClock, type PinnedClock } from '../helpers/clock.js';
import { exportLedger, verifyExport } from '../helpers/ledger-export.js';
import { frontThreadsSupported } from '../../src/front/node-version.js';
import { hashToBytes } from '../../src/ledger/merkle/hasher.js';
import { verifyInclusion } from '../../src/ledger/merkle/verify.js';

// Fronts are threads where listen has reusePort (Node >= 22.12), else cluster processes: the same tests hold for both.
const FRONT_KIND = frontThreadsSupported() ? 'threads' : 'processes';
const FRONTS = 2;

/** Disabling the sign-in of employee `subject` (the offboarding call), executed at once. */
const disableSignIn = (id: string, subject: string) =>
  offboardingBody({
    execution_id: id,
    phase: 'execute',
    envelope: { subject: { type: 'Employee', id: subject } },
    action: { arguments: { employee_id: subject } },
  });

/** What must be equal between two servers' answers: everything but ids, ledger positions and hashes. */
const VOLATILE = new Set(['decision_id', 'approval_id', 'approval_used', 'seq', 'ts', 'prev', 'hash', 'record', 'records', 'created_at', 'revoked_at']);
function stable(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(stable);
  if (v === null || typeof v !== 'object') return v;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) out[k] = VOLATILE.has(k) ? typeof x : stable(x);
  return out;
}

describe(`HTTP fronts (${FRONT_KIND})`, () => {
  let fronts: TestServer;
  let plain: TestServer;
  let dir: string;
  let clock: PinnedClock;
  const policies = () => join(dir, 'policies');
  const setClock = (t: string) => clock.set(t);

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'writ-fronts-'));
    clock = pinnedClock('2026-08-24T15:30:00+07:00', dir);
    // The fronts' server reads a copy of the policy dir (the reload test edits it); same content, same policy_version.
    cpSync(join(REPO, 'policies'), policies(), { recursive: true });
    [fronts, plain] = await Promise.all([
      startTestServer({ policyDir: policies(), clockFile: clock.file, config: { http_threads: FRONTS } }),
      startTestServer({ clockFile: clock.file, config: { http_threads: 0 } }),
    ]);
  });
  after(async () => {
    const codes = await Promise.all([fronts?.stop(), plain?.stop()]);
    rmSync(dir, { recursive: true, force: true });
    assert.deepEqual(codes, [0, 0], 'SIGTERM exits 0');
  });

  test('the log names the fronts; the plain server has none', () => {
    // The fronts' line comes before the listening line, which scripts wait for and which stays as it was.
    assert.match(
      fronts.output(),
      new RegExp(`writ serve: ${FRONTS} HTTP front ${FRONT_KIND} \\(http_threads\\)[^\\n]*\\nwrit serve: listening on http://127\\.0\\.0\\.1:\\d+\\n`),
      fronts.output(),
    );
    assert.doesNotMatch(plain.output(), /HTTP front/, plain.output());
  });

  test('a decision sequence answers and ledgers exactly as without fronts, and its export verifies', async () => {
    type Step = { status: number; body: any; contentType: string | null };
    const story = async (s: TestServer): Promise<{ steps: Step[]; from: number }> => {
      const t = s.tokens;
      const from = (await exportLedger(s)).records.length;
      const steps: Step[] = [];
      const step = async (method: string, path: string, token: string, body: unknown) => {
        const res = await fetch(s.url + path, {
          method,
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
        const text = await res.text();
        const parsed = JSON.parse(text);
        steps.push({ status: res.status, body: parsed, contentType: res.headers.get('content-type') });
        return parsed;
      };
      setClock('2026-08-24T15:30:00+07:00');
      await step('POST', '/v1/decisions', t.pep, readEmployeeBody('SEQ-read', { phase: 'propose' })); // fresh allow, proposed
      await step('POST', '/v1/decisions', t.pep, readEmployeeBody('SEQ-read-x')); // fresh allow, invoking
      await step('POST', '/v1/decisions', t.pep, offboardingBody({ execution_id: 'SEQ-early', phase: 'execute' })); // fresh deny (early)
      await step('POST', '/v1/decisions', t.pep, offboardingBody({ execution_id: 'SEQ-other', action: { arguments: { employee_id: '9999' } } })); // deny: wrong account
      const off = offboardingBody({ execution_id: 'SEQ-off' });
      const p = await step('POST', '/v1/decisions', t.pep, off); // approval_required
      setClock('2026-08-24T15:40:00+07:00');
      await step('POST', '/v1/approvals', t.approver, approvalOf(off, p, '2026-08-24T20:00:00+07:00'));
      setClock('2026-08-24T17:05:00+07:00');
      await step('POST', '/v1/decisions', t.pep, offboardingBody({ execution_id: 'SEQ-off', phase: 'execute' })); // allow with the approval
      await step('POST', '/v1/decisions', t.pep, offboardingBody({ execution_id: 'SEQ-off', phase: 'execute' })); // in flight
      await step('POST', '/v1/executions/SEQ-off/outcome', t.pep, { status: 'committed', downstream_ref: 'idp:audit:1' });
      await step('POST', '/v1/decisions', t.pep, readEmployeeBody('SEQ-read-x')); // still invoking: in flight
      await step('POST', '/v1/decisions', t.pep, readEmployeeBody('SEQ-read', { phase: 'propose', subject: '7722' })); // conflict
      await step('POST', '/v1/decisions', t.pep2, readEmployeeBody('SEQ-read')); // actor mismatch
      return { steps, from };
    };
    const a = await story(fronts);
    const b = await story(plain);
    assert.deepEqual(
      a.steps.map((x) => [x.status, x.body.decision ?? x.body.error?.code ?? x.body.state, x.body.state]),
      [
        [200, 'allow', 'proposed'],
        [200, 'allow', 'invoking'],
        [200, 'deny', 'proposed'],
        [200, 'deny', 'proposed'],
        [200, 'approval_required', 'proposed'],
        [201, undefined, undefined],
        [200, 'allow', 'invoking'],
        [409, 'EXECUTION_IN_FLIGHT', undefined],
        [200, 'committed', 'committed'],
        [409, 'EXECUTION_IN_FLIGHT', undefined],
        [409, 'EXECUTION_CONFLICT', undefined],
        [403, 'ACTOR_MISMATCH', undefined],
      ].map(([status, what, state]) => [status, status === 201 ? undefined : what, state]),
      JSON.stringify(a.steps.map((x) => [x.status, x.body])),
    );
    assert.deepEqual(
      a.steps.map((x) => stable(x.body)),
      b.steps.map((x) => stable(x.body)),
    );
    // Same members in the same order, same media type.
    assert.deepEqual(
      a.steps.map((x) => JSON.stringify(Object.keys(x.body))),
      b.steps.map((x) => JSON.stringify(Object.keys(x.body))),
    );
    assert.deepEqual(
      a.steps.map((x) => x.contentType),
      b.steps.map((x) => x.contentType),
    );
    const allowed = a.steps[6]!.body;
    assert.equal(typeof allowed.approval_used, 'string');

    // The records the steps wrote: same kinds, same content (a front builds the record's canonical members itself).
    const ra = (await exportLedger(fronts)).records.slice(a.from).filter((r) => r.kind !== 'checkpoint');
    const rb = (await exportLedger(plain)).records.slice(b.from).filter((r) => r.kind !== 'checkpoint');
    assert.deepEqual(
      ra.map((r) => r.kind),
      ['decision', 'decision', 'decision', 'decision', 'decision', 'approval', 'decision', 'refusal', 'outcome', 'refusal', 'refusal'],
    );
    assert.deepEqual(
      rb.map((r) => r.kind),
      ra.map((r) => r.kind),
    );
    assert.deepEqual(ra.map(stable), rb.map(stable));
    for (const [i, step] of a.steps.entries()) {
      if (step.body.record)
        assert.ok(
          ra.some((r) => r.seq === step.body.record.seq && r.hash === step.body.record.hash),
          `step ${i}'s record is in the export`,
        );
    }

    // The export made with fronts verifies offline against the signed checkpoint, and an inclusion proof of a front's record holds.
    const t = fronts.tokens;
    const { text, records } = await exportLedger(fronts);
    const keys = (await call(fronts, 'GET', '/v1/ledger/keys', { token: t.auditor })).body;
    const cp = (await call(fronts, 'GET', '/v1/ledger/checkpoint', { token: t.auditor })).body;
    const v = verifyExport(text, keys, cp);
    assert.equal(v.status, 0, v.raw);
    assert.equal(v.out.ok, true, v.raw);
    assert.equal(v.out.records, records.length);
    const first = a.steps[0]!.body.record;
    const inc = await call(fronts, 'GET', `/v1/ledger/proofs/inclusion?seq=${first.seq}&size=${records.length}`, { token: t.auditor });
    assert.equal(inc.status, 200, inc.text);
    assert.equal(inc.body.leaf, first.hash);
    verifyInclusion(
      first.seq,
      records.length,
      hashToBytes(first.hash),
      inc.body.path.map((h: string) => Buffer.from(h, 'hex')),
      hashToBytes(inc.body.root),
    );
  });

  test('an admin entity change is honoured by the very next decision through the fronts', async () => {
    const t = fronts.tokens;
    setClock('2026-08-24T17:05:00+07:00');
    // Toggle legal hold on a fresh subject, each change followed at once by a fresh decision, several times over.
    const employee = (legalHold: boolean) => offboardingEmployee({ employee_id: '7730', legal_hold: legalHold });
    for (let i = 0; i < 6; i++) {
      const hold = i % 2 === 0;
      const put = await call(fronts, 'PUT', '/v1/entities/Employee/7730', { token: t.admin, body: employee(hold) });
      assert.equal(put.status, 200, put.text);
      const r = await decide(fronts, disableSignIn(`HOLD-${i}`, '7730'));
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.entities_version, put.body.entities_version, `decision ${i} used the entities after the change`);
      // Fresh execution, no approval: the HR forbid always answers approval_required — unless legal hold denies.
      if (hold) {
        assert.equal(r.body.decision, 'deny', r.text);
        assert.ok(r.body.reasons.includes('legal-hold'), r.text);
      } else {
        assert.equal(r.body.decision, 'approval_required', r.text);
        assert.ok(!r.body.reasons.includes('legal-hold'), r.text);
      }
    }
  });

  test('decisions racing entity changes never use facts older than the last change answered before they were sent', async () => {
    const t = fronts.tokens;
    setClock('2026-08-24T17:05:00+07:00');
    // Every change gives a distinct entities_version (status differs); legal hold on every other one.
    const versions: Array<{ version: string; hold: boolean }> = [];
    const put = async (i: number) => {
      const hold = i % 2 === 1;
      const r = await call(fronts, 'PUT', '/v1/entities/Employee/7731', {
        token: t.admin,
        body: offboardingEmployee({ employee_id: '7731', legal_hold: hold, status: `s-${i}` }),
      });
      assert.equal(r.status, 200, r.text);
      versions.push({ version: r.body.entities_version, hold });
    };
    await put(0);
    let changing = true;
    const changes = (async () => {
      for (let i = 1; i <= 15; i++) await put(i);
      changing = false;
    })();
    let n = 0;
    const checked: Array<{ known: number; body: any }> = [];
    const decider = async () => {
      while (changing) {
        const known = versions.length - 1; // the last change answered before this request is sent
        const r = await decide(fronts, disableSignIn(`RACE-${n++}`, '7731'));
        assert.equal(r.status, 200, r.text);
        checked.push({ known, body: r.body });
      }
    };
    await Promise.all([changes, decider(), decider(), decider()]);
    assert.ok(checked.length >= 3, 'each decider ran while the changes were under way');
    for (const { known, body } of checked) {
      const used = versions.findIndex((v) => v.version === body.entities_version);
      assert.ok(used >= known, `${body.execution_id} used entities version #${used} though #${known} was answered before it was sent`);
      assert.equal(body.decision, versions[used]!.hold ? 'deny' : 'approval_required', `${body.execution_id} under version #${used}`);
    }
  });

  test('a policy reload is honoured by the very next decision through the fronts', async () => {
    const t = fronts.tokens;
    const policyLoads = async () =>
      (await call(fronts, 'GET', '/v1/ledger/records?kind=policy&limit=1000', { token: t.auditor })).body.records.filter((r: any) => r.result === 'loaded');
    const before = await decide(fronts, readEmployeeBody('REL-0'));
    assert.equal(before.body.decision, 'allow', before.text);
    const v1 = before.body.policy_version;
    const loads = (await policyLoads()).length;

    // Forbid reads: once the reload is ledgered, the next decision through a front must deny under the new version.
    writeFileSync(join(policies(), 'zz-no-reads.cedar'), '@id("no-reads")\nforbid (principal, action == Action::"hris/read_employee", resource);\n');
    const loaded = await until(async () => {
      const l = await policyLoads();
      return l.length > loads ? l[l.length - 1] : undefined;
    }, 'the reload record');
    // The record is written just before the set is swapped in: wait for the swap on the sidecar (a pass-through probe).
    // (The start's load counts as the first `ok`.)
    await until(
      async () => ((await call(fronts, 'GET', '/metrics')).text.match(/writ_policy_reloads_total\{result="ok"\} ([2-9]|\d\d)/) ? true : undefined),
      'the swap',
    );
    for (let i = 0; i < 4; i++) {
      const r = await decide(fronts, readEmployeeBody(`REL-1-${i}`));
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.policy_version, loaded.policy_version);
      assert.notEqual(r.body.policy_version, v1);
      assert.equal(r.body.decision, 'deny', r.text);
      assert.deepEqual(r.body.reasons, ['no-reads']);
    }

    // And back: the old version again, allowing.
    rmSync(join(policies(), 'zz-no-reads.cedar'));
    await until(async () => {
      const l = await policyLoads();
      return l.length > loads + 1 ? true : undefined;
    }, 'the second reload record');
    await until(
      async () => ((await call(fronts, 'GET', '/metrics')).text.match(/writ_policy_reloads_total\{result="ok"\} ([3-9]|\d\d)/) ? true : undefined),
      'the second swap',
    );
    const back = await decide(fronts, readEmployeeBody('REL-2'));
    assert.equal(back.body.policy_version, v1, back.text);
    assert.equal(back.body.decision, 'allow', back.text);
  });

  test('50 concurrent decisions on one execution id: one reservation, the rest refused as without fronts', async () => {
    const race = async (s: TestServer, id: string) => {
      const results = await Promise.all(Array.from({ length: 50 }, () => decide(s, readEmployeeBody(id))));
      const decisions = (await call(s, 'GET', `/v1/ledger/records?kind=decision&execution_id=${id}&limit=1000`, { token: s.tokens.auditor })).body.records;
      const refusals = (await call(s, 'GET', `/v1/ledger/records?kind=refusal&execution_id=${id}&limit=1000`, { token: s.tokens.auditor })).body.records;
      const view = (await call(s, 'GET', `/v1/executions/${id}`, { token: s.tokens.pep })).body;
      return { results, decisions, refusals, view };
    };
    setClock('2026-08-24T15:30:00+07:00');
    const f = await race(fronts, 'CONC-1');
    const wins = f.results.filter((r) => r.status === 200);
    assert.equal(wins.length, 1, JSON.stringify(f.results.map((r) => [r.status, r.body.error?.code])));
    assert.equal(wins[0]!.body.decision, 'allow');
    assert.equal(wins[0]!.body.state, 'invoking');
    for (const r of f.results.filter((x) => x.status !== 200)) {
      assert.equal(r.status, 409, r.text);
      assert.equal(r.body.error.code, 'EXECUTION_IN_FLIGHT', r.text);
    }
    assert.equal(f.decisions.length, 1, JSON.stringify(f.decisions));
    assert.equal(f.decisions[0].seq, wins[0]!.body.record.seq);
    assert.equal(f.decisions[0].hash, wins[0]!.body.record.hash);
    assert.equal(f.view.state, 'invoking');
    const ledgered = (x: typeof f) => x.results.filter((r) => /is being invoked/.test(r.body.error?.message ?? '')).length;
    // Every refusal is ledgered before it is answered (docs/protocol.md §4).
    assert.equal(f.refusals.length, 49, JSON.stringify(f.results.filter((r) => r.status !== 200).map((r) => r.body.error.message)));
    assert.equal(ledgered(f), 49);
    assert.ok(f.refusals.every((r: any) => r.code === 'EXECUTION_IN_FLIGHT'));
    assert.deepEqual(f.view.records, [f.decisions[0].seq, ...f.refusals.map((r: any) => r.seq)]);

    const p = await race(plain, 'CONC-1');
    const summary = (x: typeof f) => x.results.map((r) => `${r.status} ${r.body.error?.code ?? r.body.state}`).sort();
    assert.deepEqual(summary(f), summary(p));
    assert.equal(p.decisions.length, 1);
    assert.equal(p.refusals.length, 49);

    // 50 distinct ids at once: every one reserved once, in 50 distinct records.
    const many = await Promise.all(Array.from({ length: 50 }, (_, i) => decide(fronts, readEmployeeBody(`CONC-M-${i}`))));
    assert.deepEqual(
      many.map((r) => r.status),
      many.map(() => 200),
      JSON.stringify(many.filter((r) => r.status !== 200).map((r) => r.body)),
    );
    assert.equal(new Set(many.map((r) => r.body.record.seq)).size, 50);
  });

  test('other routes pass through unchanged: streaming export, proofs, 404, 405 with Allow, 401, 403', async () => {
    const t = fronts.tokens;
    // The export streams (no declared length) and ends with the records the sidecar holds.
    const res = await fetch(`${fronts.url}/v1/ledger/export`, { headers: { authorization: `Bearer ${t.auditor}` } });
    assert.equal(res.status, 200);
    const plainRes = await fetch(`${plain.url}/v1/ledger/export`, { headers: { authorization: `Bearer ${t.auditor}` } });
    assert.equal(res.headers.get('content-type'), plainRes.headers.get('content-type'));
    await plainRes.text();
    const lines = (await res.text()).trim().split('\n');
    const size = (await call(fronts, 'GET', '/v1/ledger/checkpoint', { token: t.auditor })).body.size as number;
    assert.ok(lines.length >= size);
    const cons = await call(fronts, 'GET', `/v1/ledger/proofs/consistency?from=${size}&to=${lines.length}`, { token: t.auditor });
    assert.equal(cons.status, 200, cons.text);
    assert.ok(Array.isArray(cons.body.path));
    const ranged = await call(fronts, 'GET', '/v1/ledger/export?from=2&to=5', { token: t.auditor });
    assert.deepEqual(ranged.text.trim().split('\n'), lines.slice(2, 5));

    for (const [method, path, allow] of [
      ['GET', '/v1/decisions', 'POST'],
      ['PUT', '/v1/executions/X-1/outcome', 'POST'],
      ['POST', '/healthz', 'GET, HEAD'],
    ] as const) {
      const r = await fetch(fronts.url + path, { method, headers: { authorization: `Bearer ${t.admin}` } });
      assert.equal(r.status, 405, `${method} ${path}`);
      assert.equal(r.headers.get('allow'), allow, `${method} ${path}`);
      assert.equal((await r.json()).error.code, 'METHOD_NOT_ALLOWED');
    }
    const cases: Array<[string, string, Parameters<typeof call>[3]]> = [
      ['POST', '/v1/decisions', { body: readEmployeeBody('PT-1') }],
      ['POST', '/v1/decisions', { token: 'not-a-token', body: readEmployeeBody('PT-1') }],
      ['POST', '/v1/decisions', { token: t.auditor, body: readEmployeeBody('PT-1') }],
      ['POST', '/v1/decisions', { token: t.admin, body: readEmployeeBody('PT-1') }],
      ['GET', '/v1/nothing-here', { token: t.auditor }],
      ['GET', '/v1/ledger/records', { token: t.pep }],
    ];
    for (const [method, path, init] of cases) {
      const a = await call(fronts, method, path, init);
      const b = await call(plain, method, path, init);
      assert.equal(a.status, b.status, `${method} ${path}: ${a.text}`);
      assert.deepEqual(a.body, b.body, `${method} ${path}`);
      assert.ok(a.status >= 400, a.text);
    }
    assert.equal((await call(fronts, 'GET', '/v1/executions/PT-1', { token: t.pep })).status, 404, 'nothing was decided for PT-1');
    assert.equal((await call(fronts, 'GET', '/healthz')).status, 200);
    assert.equal((await call(fronts, 'GET', '/readyz')).status, 200);
  });

  test('bad decision bodies are refused with the same status and code as without fronts', async () => {
    const t = fronts.tokens;
    const { execution_id: _drop, ...noId } = readEmployeeBody('BAD-0');
    const cases: Array<[string, Parameters<typeof call>[3]]> = [
      ['truncated JSON', { token: t.pep, rawBody: '{"execution_id":' }],
      ['empty body', { token: t.pep, rawBody: '' }],
      ['not UTF-8', { token: t.pep, rawBody: Buffer.concat([Buffer.from('{"a":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]) }],
      ['text/plain', { token: t.pep, rawBody: JSON.stringify(readEmployeeBody('BAD-1')), headers: { 'content-type': 'text/plain' } }],
      ['JSON array', { token: t.pep, rawBody: '[]' }],
      ['no execution id', { token: t.pep, body: noId }],
      ['bad phase', { token: t.pep, body: { ...readEmployeeBody('BAD-3'), phase: 'run' } }],
      ['invalid envelope', { token: t.pep, body: offboardingBody({ execution_id: 'BAD-4', envelope: { extra: 1 } }) }],
      ['execute_after without offset', { token: t.pep, body: offboardingBody({ execution_id: 'BAD-5', envelope: { execute_after: '2026-08-24T17:00:00' } }) }],
      [
        'lossy number',
        { token: t.pep, rawBody: JSON.stringify(offboardingBody({ execution_id: 'BAD-6' })).replace('"employee_id":"7721"', '"employee_id":1.0') },
      ],
      [
        'duplicate key',
        {
          token: t.pep,
          rawBody: JSON.stringify(offboardingBody({ execution_id: 'BAD-7' })).replace('"employee_id":"7721"', '"employee_id":"7721","employee_id":"7721"'),
        },
      ],
      ['actor mismatch', { token: t.pep2, body: readEmployeeBody('BAD-8') }],
      ['supersedes a missing execution', { token: t.pep, body: offboardingBody({ execution_id: 'BAD-9', envelope: { supersedes: 'NOPE' } }) }],
      ['over the body limit', { token: t.pep, rawBody: `{"a":"${'x'.repeat(1024 * 1024 + 10)}"}` }],
    ];
    for (const [what, init] of cases) {
      const a = await call(fronts, 'POST', '/v1/decisions', init);
      const b = await call(plain, 'POST', '/v1/decisions', init);
      assert.ok(a.status >= 400 && a.status < 500, `${what}: ${a.status} ${a.text}`);
      assert.equal(a.status, b.status, `${what}: ${a.text} vs ${b.text}`);
      assert.deepEqual(a.body, b.body, what);
    }
    // No content-type at all (call() would add one).
    const untyped = async (s: TestServer) => {
      const res = await fetch(`${s.url}/v1/decisions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${t.pep}` },
        body: new TextEncoder().encode(JSON.stringify(readEmployeeBody('BAD-2'))),
      });
      return { status: res.status, body: await res.json() };
    };
    const [ua, ub] = [await untyped(fronts), await untyped(plain)];
    assert.equal(ua.status, 415, JSON.stringify(ua.body));
    assert.deepEqual(ua, ub);
  });

  test('refusals answered before any route are counted on /metrics, by the sidecar alone and through the fronts', async () => {
    const series = (text: string, name: string): number => {
      const line = text.split('\n').find((l) => l.startsWith(`${name} `));
      return line === undefined ? 0 : Number(line.slice(name.length + 1));
    };
    const UNROUTED = 'writ_http_requests_total{route="unrouted",status="400"}';
    const INVALID = 'writ_refusals_total{code="INVALID_REQUEST"}';
    for (const s of [plain, fronts]) {
      const scrape = async () => (await call(s, 'GET', '/metrics')).text;
      const before = await scrape();
      const answers = await Promise.all([
        rawExchange(s.url, 'GET /healthz HTTP/1.1\r\nHost: not a host\r\n\r\n'), // refused Host
        rawExchange(s.url, 'GET /healthz HTTP/1.1\r\n\r\n'), // HTTP/1.1 with no Host
        rawExchange(s.url, 'GET /healthz HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n'), // Node's parser refuses it
      ]);
      for (const a of answers) assert.match(a.answer, /^HTTP\/1\.1 400 [^\r]*\r\n[\s\S]*"code":"INVALID_REQUEST"/, a.answer);
      // A front posts its count to the sidecar: it lands a moment after the answer.
      let after = '';
      await until(async () => (series((after = await scrape()), UNROUTED) - series(before, UNROUTED) >= 3 ? true : undefined), 'the counts', 50).catch(
        () => undefined,
      );
      assert.equal(series(after, UNROUTED) - series(before, UNROUTED), 3, `${s === plain ? 'plain' : 'fronts'}: ${after}`);
      assert.equal(series(after, INVALID) - series(before, INVALID), 3);
    }
  });

  test('a chunked decision body passes through and is decided like any other', async () => {
    const { port } = new URL(fronts.url);
    const json = Buffer.from(JSON.stringify(readEmployeeBody('CHUNKED-1')));
    const head =
      `POST /v1/decisions HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${fronts.tokens.pep}\r\n` +
      'Content-Type: application/json; charset=utf-8\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n';
    const half = Math.floor(json.length / 2);
    const chunk = (b: Buffer) => Buffer.concat([Buffer.from(`${b.length.toString(16)}\r\n`), b, Buffer.from('\r\n')]);
    const r = await rawExchange(fronts.url, head, [chunk(json.subarray(0, half)), chunk(json.subarray(half)), Buffer.from('0\r\n\r\n')]);
    assert.equal(r.error, undefined, r.answer);
    assert.match(r.answer, /^HTTP\/1\.1 200 /, r.answer);
    const body = JSON.parse(r.answer.slice(r.answer.indexOf('\r\n\r\n') + 4).replace(/^[0-9a-f]+\r\n|\r\n0\r\n\r\n$/g, ''));
    assert.equal(body.decision, 'allow');
    assert.equal(body.execution_id, 'CHUNKED-1');
    const again = await decide(fronts, readEmployeeBody('CHUNKED-1'));
    assert.equal(again.body.error?.code, 'EXECUTION_IN_FLIGHT', again.text);
  });

  test('2 MiB to any route is 413 PAYLOAD_TOO_LARGE, then a clean close while the client keeps sending', async () => {
    const { hostname } = new URL(fronts.url);
    for (const path of ['/v1/approvals/some-approval/revoke', '/v1/decisions', '/v1/executions/X-1/outcome']) {
      const token = path.includes('approvals') ? fronts.tokens.approver : fronts.tokens.pep;
      const head = `POST ${path} HTTP/1.1\r\nHost: ${hostname}\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: ${2 * 1024 * 1024}\r\n\r\n`;
      const r = await rawExchange(fronts.url, head, { chunk: Buffer.alloc(64 * 1024, 0x20), total: 2 * 1024 * 1024 });
      assert.equal(r.error, undefined, `${path}: the connection was reset (${r.error}) after ${r.sentBytes} bytes; answer so far: ${r.answer.slice(0, 200)}`);
      assert.match(r.answer, /^HTTP\/1\.1 413 /, path);
      assert.match(r.answer, /"code":"PAYLOAD_TOO_LARGE"/, path);
      assert.match(r.answer, /\r\nconnection: close\r\n/i, path);
    }
    // The same with a chunked body (no declared length): the sidecar finds out while reading, through the front.
    const frame = Buffer.concat([Buffer.from(`${(64 * 1024).toString(16)}\r\n`), Buffer.alloc(64 * 1024, 0x20), Buffer.from('\r\n')]);
    for (const s of [fronts, plain]) {
      const head = `POST /v1/decisions HTTP/1.1\r\nHost: ${hostname}\r\nAuthorization: Bearer ${s.tokens.pep}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`;
      const r = await rawExchange(s.url, head, { chunk: frame, total: 32 * frame.length });
      assert.equal(
        r.error,
        undefined,
        `chunked (${s === fronts ? 'fronts' : 'plain'}): reset (${r.error}) after ${r.sentBytes} bytes; answer so far: ${r.answer.slice(0, 200)}`,
      );
      assert.match(r.answer, /^HTTP\/1\.1 413 /, r.answer.slice(0, 200));
      assert.match(r.answer, /"code":"PAYLOAD_TOO_LARGE"/);
    }
    assert.equal((await call(fronts, 'GET', '/healthz')).status, 200);
  });

  test('a second sidecar on the port of one with fronts fails to start instead of sharing the port', async () => {
    // A sidecar with fronts on the port of one with fronts, or of one without; and one without on the port of one with.
    for (const [held, threads] of [
      [fronts, FRONTS],
      [fronts, 0],
      [plain, FRONTS],
    ] as const) {
      const { port } = new URL(held.url);
      await assert.rejects(
        startTestServer({ config: { listen: `127.0.0.1:${port}`, http_threads: threads } }),
        (e: Error) => {
          assert.match(e.message, /exited with [1-9]\d* before listening/, e.message);
          assert.match(e.message, /EADDRINUSE|in use/i, e.message);
          return true;
        },
        `http_threads ${threads} on the port of the ${held === fronts ? 'fronts' : 'plain'} server`,
      );
    }
    // The first one still answers, and every decision on its port is still its own.
    const r = await decide(fronts, readEmployeeBody('PORT-1'));
    assert.equal(r.status, 200, r.text);
    const seen = await call(fronts, 'GET', `/v1/ledger/records/${r.body.record.seq}`, { token: fronts.tokens.auditor });
    assert.equal(seen.body.hash, r.body.record.hash);
  });
});

describe('a single HTTP front (http_threads: 1) is a thread on every Node, alone on its port', () => {
  test('it decides, forwards an outcome, ledgers both, and a second sidecar cannot share its port', async () => {
    const s = await startTestServer({ config: { http_threads: 1 } });
    try {
      // A thread even where Node has no SO_REUSEPORT (Node 20): one front shares the port with nobody.
      assert.match(s.output(), /writ serve: 1 HTTP front thread \(http_threads\)/, s.output());
      const d = await decide(s, readEmployeeBody('ONE-1'));
      assert.equal(d.status, 200, d.text);
      assert.equal(d.body.decision, 'allow');
      assert.equal(d.body.state, 'invoking');
      const o = await call(s, 'POST', `/v1/executions/ONE-1/outcome`, { token: s.tokens.pep, body: { status: 'committed' } });
      assert.equal(o.status, 200, o.text);
      assert.equal(o.body.state, 'committed');
      const ledger = await call(s, 'GET', '/v1/ledger/records?execution_id=ONE-1', { token: s.tokens.auditor });
      assert.deepEqual(
        ledger.body.records.map((r: any) => r.kind),
        ['decision', 'outcome'],
      );
      assert.equal(ledger.body.records[0].hash, d.body.record.hash);
      const { port } = new URL(s.url);
      for (const threads of [1, 0]) {
        await assert.rejects(
          startTestServer({ config: { listen: `127.0.0.1:${port}`, http_threads: threads } }),
          (e: Error) => {
            assert.match(e.message, /EADDRINUSE|in use/i, e.message);
            return true;
          },
          `http_threads ${threads} on the port of a single front`,
        );
      }
      assert.equal((await call(s, 'GET', '/healthz')).status, 200);
    } finally {
      assert.equal(await s.stop(), 0, 'SIGTERM exits 0');
    }
  });
});

describe(`HTTP fronts (${FRONT_KIND}): SIGTERM with decisions in flight`, () => {
  test('exits 0; every answered decision is in the ledger, covered by the final checkpoint', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'writ-fronts-term-'));
    try {
      const s = await startTestServer({ dataDir, config: { http_threads: FRONTS } });
      // Warm up (the first decision loads the engine), then a burst: SIGTERM lands with the first answer of
      // the burst, while the rest are in flight; a trickle keeps arriving during the shutdown.
      const warm = await decide(s, readEmployeeBody('TERM-warm'));
      assert.equal(warm.status, 200, warm.text);
      let stopping: Promise<number | null> | undefined;
      let answeredAfterTerm = 0;
      const decideWhileStopping = async (id: string) => {
        try {
          const r = await decide(s, readEmployeeBody(id), { timeoutMs: 20_000 });
          if (r.status === 200) {
            if (stopping) answeredAfterTerm++;
            stopping ??= s.stop({ keepData: true });
          }
          return r;
        } catch (e) {
          return { status: 0, body: undefined, text: (e as Error).message };
        }
      };
      const burst = Array.from({ length: 80 }, (_, i) => decideWhileStopping(`TERM-${i}`));
      const trickle = Array.from({ length: 20 }, async (_, i) => {
        // Arrivals spread over the stop (one every 5 ms): the pace is the scenario, not a wait for something.
        await new Promise((r) => setTimeout(r, 5 * i));
        return decideWhileStopping(`TERM-late-${i}`);
      });
      const results = [warm, ...(await Promise.all([...burst, ...trickle]))];
      const code = await (stopping ?? s.stop({ keepData: true }));
      assert.equal(code, 0, s.output());
      const acked = results.filter((r) => r.status === 200).map((r) => r.body);
      // (Diagnostic, not a timing assertion: how many were answered after SIGTERM.)
      process.stdout.write(
        `# SIGTERM test: ${acked.length} answered, ${answeredAfterTerm} of them after SIGTERM, ${results.length - acked.length} refused or cut off\n`,
      );
      assert.ok(acked.length >= 1);
      for (const r of results) {
        // Refused or cut off while stopping; never an error page, never an allow without its record.
        if (r.status !== 200 && r.status !== 0) assert.equal(r.status, 503, r.text);
      }

      // A restart on the same data dir (no fronts) writes nothing at start: the ledger ends with the SIGTERM checkpoint.
      const s2 = await startTestServer({ dataDir, config: { http_threads: 0 } });
      try {
        const { text, records } = await exportLedger(s2);
        const last = records[records.length - 1];
        assert.equal(last.kind, 'checkpoint', 'the chain ends with the final (SIGTERM) checkpoint');
        assert.equal(last.size, last.seq, 'it covers every record before it');
        for (const a of acked) {
          const rec = records[a.record.seq];
          assert.ok(rec, `acknowledged seq ${a.record.seq} is in the export`);
          assert.equal(rec.hash, a.record.hash);
          assert.equal(rec.kind, 'decision');
          assert.equal(rec.execution_id, a.execution_id);
          assert.ok(a.record.seq < last.size);
        }
        const keys = (await call(s2, 'GET', '/v1/ledger/keys', { token: s2.tokens.auditor })).body;
        const v = verifyExport(text, keys, last);
        assert.equal(v.status, 0, v.raw);
        assert.equal(v.out.ok, true, v.raw);
        // Each acknowledged execution is reserved: the same id again is in flight, not decided anew.
        const again = await decide(s2, readEmployeeBody(acked[0].execution_id));
        assert.equal(again.body.error?.code, 'EXECUTION_IN_FLIGHT', again.text);
      } finally {
        assert.equal(await s2.stop({ keepData: true }), 0);
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe(`HTTP fronts (${FRONT_KIND}): AuthZEN`, () => {
  // The AuthZEN test policies (test/authzen/http.test.ts): AuthZEN names actions without a "/".
  const POLICIES = `
@id("read-doc") permit (principal is user, action == Action::"read", resource is doc) when { principal.clearance >= resource.level };
@id("write-needs-approval") @requires_approval("group::\\"editors\\"") forbid (principal, action == Action::"write", resource) when { context.size > 10 };
@id("write") permit (principal is user, action == Action::"write", resource is doc);
`;
  const ENTITIES = [
    { uid: { type: 'user', id: 'alice' }, attrs: { clearance: 2 }, parents: [] },
    { uid: { type: 'user', id: 'bob' }, attrs: { clearance: 5 }, parents: [] },
    { uid: { type: 'doc', id: 'public' }, attrs: { level: 1 }, parents: [] },
    { uid: { type: 'doc', id: 'secret' }, attrs: { level: 5 }, parents: [] },
  ];
  const TOKENS = { evaluator: 'fronts-authzen-evaluator', pep: 'fronts-authzen-pep-alice', auditor: 'fronts-authzen-auditor', admin: 'fronts-authzen-admin' };
  let dir: string;
  let fronts: TestServer;
  let plain: TestServer;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'writ-fronts-authzen-'));
    writeFileSync(join(dir, 'docs.cedar'), POLICIES);
    writeFileSync(join(dir, 'entities.json'), JSON.stringify(ENTITIES));
    const config = (httpThreads: number) => ({
      http_threads: httpThreads,
      tokens: [
        { token: TOKENS.evaluator, role: 'evaluator' },
        { token: TOKENS.pep, role: 'pep', actor: { type: 'user', id: 'alice' } },
        { token: TOKENS.auditor, role: 'auditor' },
        { token: TOKENS.admin, role: 'admin' },
      ],
    });
    // One fixed PDP time for both, so the records' `now` compare equal.
    const clockFile = pinnedClock('2026-08-24T15:30:00+07:00', dir).file;
    [fronts, plain] = await Promise.all([
      startTestServer({ policyDir: dir, clockFile, config: config(FRONTS) }),
      startTestServer({ policyDir: dir, clockFile, config: config(0) }),
    ]);
  });
  after(async () => {
    const codes = await Promise.all([fronts?.stop(), plain?.stop()]);
    rmSync(dir, { recursive: true, force: true });
    assert.deepEqual(codes, [0, 0], 'SIGTERM exits 0');
  });

  const records = async (s: TestServer) => (await exportLedger(s, TOKENS.auditor)).records.filter((x) => x.kind === 'decision');
  const user = (id: string) => ({ type: 'user', id });
  const doc = (id: string) => ({ type: 'doc', id });
  const read = (who: string, what: string) => ({ subject: user(who), action: { name: 'read' }, resource: doc(what) });

  test('evaluated on a front and recorded by the sidecar: the same answers, headers and records as without fronts', async () => {
    type Step = { status: number; body: any; requestId: string | null; contentType: string | null };
    const story = async (s: TestServer): Promise<{ steps: Step[]; from: number }> => {
      const from = (await records(s)).length;
      const steps: Step[] = [];
      const step = async (path: string, body: unknown, token = TOKENS.evaluator, rawBody?: string) => {
        const res = await fetch(s.url + path, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'x-request-id': `rq-${steps.length}` },
          body: rawBody ?? JSON.stringify(body),
        });
        steps.push({
          status: res.status,
          body: JSON.parse(await res.text()),
          requestId: res.headers.get('x-request-id'),
          contentType: res.headers.get('content-type'),
        });
      };
      await step('/access/v1/evaluation', read('bob', 'secret'));
      await step('/access/v1/evaluation', read('alice', 'secret'));
      await step('/access/v1/evaluation', { subject: user('alice'), action: { name: 'write' }, resource: doc('public'), context: { size: 50 } }); // approval_required
      await step('/access/v1/evaluations', { evaluations: [read('bob', 'secret'), read('alice', 'secret'), read('alice', 'public')] });
      for (const semantic of ['deny_on_first_deny', 'permit_on_first_permit']) {
        await step('/access/v1/evaluations', {
          evaluations: [read('alice', 'secret'), read('bob', 'secret'), read('alice', 'public')],
          options: { evaluations_semantic: semantic },
        });
      }
      await step('/access/v1/evaluation', read('alice', 'public'), TOKENS.pep); // a pep asking about its own actor
      await step('/access/v1/evaluation', read('bob', 'public'), TOKENS.pep); // ACTOR_MISMATCH
      await step('/access/v1/evaluation', undefined, TOKENS.evaluator, '{"subject":'); // INVALID_JSON
      await step('/access/v1/evaluation', { subject: user('bob') }); // a schema refusal with its pointer
      return { steps, from };
    };
    const a = await story(fronts);
    const b = await story(plain);
    assert.deepEqual(
      a.steps.map((x) => x.status),
      [200, 200, 200, 200, 200, 200, 200, 403, 400, 400],
      JSON.stringify(a.steps),
    );
    assert.deepEqual(
      a.steps.map((x) => stable(x.body)),
      b.steps.map((x) => stable(x.body)),
    );
    // Same members in the same order.
    assert.deepEqual(
      a.steps.map((x) => JSON.stringify(Object.keys(x.body))),
      b.steps.map((x) => JSON.stringify(Object.keys(x.body))),
    );
    assert.deepEqual(
      a.steps.map((x) => [x.requestId, x.contentType]),
      b.steps.map((x) => [x.requestId, x.contentType]),
    );
    assert.deepEqual(
      a.steps.slice(0, 3).map((x) => [x.body.decision, x.body.context.obligations?.length]),
      [
        [true, undefined],
        [false, undefined],
        [false, 1],
      ],
    );
    const ra = (await records(fronts)).slice(a.from);
    const rb = (await records(plain)).slice(b.from);
    // 3 singles, 3 in the batch, 1 and 2 where the semantics stopped, the pep's 1; nothing for the refusals.
    assert.equal(ra.length, 10);
    assert.deepEqual(ra.map(stable), rb.map(stable));
    const ids = a.steps.flatMap((x) => (x.body.evaluations ?? [x.body]).map((d: any) => d.context?.decision_id)).filter(Boolean);
    assert.deepEqual(
      ra.map((r) => r.decision_id),
      ids,
    );
  });

  test('an entity change is honoured by the very next evaluation through the fronts', async () => {
    for (let i = 0; i < 6; i++) {
      const clearance = i % 2 === 0 ? 9 : 1;
      const put = await call(fronts, 'PUT', '/v1/entities/user/carol', { token: TOKENS.admin, body: { attrs: { clearance }, parents: [] } });
      assert.equal(put.status, 200, put.text);
      const r = await call(fronts, 'POST', '/access/v1/evaluation', { token: TOKENS.evaluator, body: read('carol', 'secret') });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.decision, clearance >= 5, `evaluation ${i} used the entities after the change`);
      const rec = (await records(fronts)).find((x) => x.decision_id === r.body.context.decision_id);
      assert.equal(rec.entities_version, put.body.entities_version);
    }
  });
});
