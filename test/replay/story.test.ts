/**
 * Policy replay (docs/protocol.md §12) on a ledger recorded by the real sidecar: the offboarding story (with
 * admin PUTs of the subject's record between decisions, and a few `hris/read_employee` calls) is
 * recorded over HTTP with a pinned PDP clock, exported, and replayed by `bin/writ policy replay`
 * against the same policies and against candidates.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash, generateKeyPairSync } from 'node:crypto';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { offboardingSteps } from '../helpers/offboarding.js';
import { REPO, WRIT_BIN, call, offboardingBody, startTestServer, type TestServer } from '../helpers/server.js';

let s: TestServer;
let dir: string;
let exportPath: string;
/** The decision records of the export, by seq. */
let decisions: Array<{ seq: number; execution_id: string; tool: string; decision: string; reasons: string[]; now: string }>;

const at = (t: string) => writeFileSync(join(dir, 'now'), t);

function replay(args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [WRIT_BIN, 'policy', 'replay', ...args], { encoding: 'utf8' });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** A copy of the bundled policies, edited by `edit(relative file, text) → text`. */
function candidate(name: string, edit: (file: string, text: string) => string, extra: Record<string, string> = {}): string {
  const out = join(dir, name);
  cpSync(join(REPO, 'policies'), out, { recursive: true });
  for (const file of ['offboarding.cedar', 'hris.cedar']) writeFileSync(join(out, file), edit(file, readFileSync(join(out, file), 'utf8')));
  for (const [file, text] of Object.entries(extra)) writeFileSync(join(out, file), text);
  return out;
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'writ-replay-'));
  at('2026-08-24T15:30:00+07:00');
  // A checkpoint every 10 records, so the export carries some to hold a truncated copy against.
  s = await startTestServer({ clockFile: join(dir, 'now'), config: { checkpoint: { every_records: 10, every_ms: 10000 } } });
  const t = s.tokens;
  const { propose, execute, decide, approve, putEmployee: put } = offboardingSteps(s);
  const read = (n: number) =>
    offboardingBody({ execution_id: `OFF-2048:read-${n}`, action: { server: 'hris', tool: 'read_employee', arguments: { employee_id: '7721' } } });

  const p = await decide(propose); // approval_required
  assert.equal((await decide(read(1))).decision, 'allow');
  at('2026-08-24T15:35:00+07:00');
  await approve(p);
  at('2026-08-24T16:30:00+07:00');
  assert.equal((await decide(execute)).decision, 'deny'); // too early
  at('2026-08-24T16:45:00+07:00');
  await put({ status: 'termination_delayed' });
  at('2026-08-24T17:01:00+07:00');
  assert.equal((await decide(execute)).decision, 'approval_required'); // the approval went stale
  await put({ status: 'termination_delayed', legal_hold: true });
  await approve(p);
  const held = await decide(execute);
  assert.equal(held.decision, 'deny');
  assert.ok(held.reasons.includes('legal-hold'));
  assert.equal((await decide(read(2))).decision, 'allow');
  await put({ status: 'terminated', legal_hold: false });
  at('2026-08-24T17:10:00+07:00');
  await approve(p);
  assert.equal((await decide(execute)).decision, 'allow');
  const outcome = await call(s, 'POST', `/v1/executions/${encodeURIComponent(propose.execution_id)}/outcome`, { token: t.pep, body: { status: 'committed' } });
  assert.equal(outcome.status, 200, outcome.text);
  assert.equal((await decide(read(3))).decision, 'allow');

  const exported = await call(s, 'GET', '/v1/ledger/export', { token: t.auditor });
  assert.equal(exported.status, 200);
  exportPath = join(dir, 'export.jsonl');
  writeFileSync(exportPath, exported.text);
  const keys = await call(s, 'GET', '/v1/ledger/keys', { token: t.auditor });
  assert.equal(keys.status, 200);
  writeFileSync(join(dir, 'keys.json'), keys.text);
  decisions = exported.text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l))
    .filter((r) => r.kind === 'decision');
  assert.equal(decisions.length, 8);
});

after(async () => {
  await s.stop();
  rmSync(dir, { recursive: true, force: true });
});

test('(a) the policies that produced the ledger: 0 changed, exit 0', () => {
  const r = replay(['--dir', join(REPO, 'policies'), exportPath]);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, '8 replayed, 0 changed\n');
});

test('(b) without the legal-hold forbid: exactly the decisions the hold denied become allow', () => {
  const dropHold = candidate('no-hold', (file, text) => (file === 'offboarding.cedar' ? text.slice(0, text.indexOf('@id("legal-hold")')) : text));
  const r = replay(['--dir', dropHold, '--json', exportPath]);
  assert.equal(r.status, 1, r.stderr);
  const lines = r.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  const held = decisions.filter((d) => d.reasons.includes('legal-hold'));
  assert.equal(held.length, 1);
  assert.deepEqual(lines, [
    {
      seq: held[0]!.seq,
      execution_id: 'OFF-2048:disable-sign-in',
      recorded: { decision: 'deny', reasons: held[0]!.reasons },
      candidate: { decision: 'allow', reasons: ['disable-sign-in-by-manager'] },
    },
    { replayed: 8, changed: 1 },
  ]);
  // Each line has exactly the contract's members, in this order.
  assert.deepEqual(Object.keys(lines[0]), ['seq', 'execution_id', 'recorded', 'candidate']);

  // The text form: the change, both reason lists, the summary.
  const text = replay(['--dir', dropHold, exportPath]);
  assert.equal(text.status, 1);
  assert.equal(
    text.stdout,
    `seq ${held[0]!.seq} OFF-2048:disable-sign-in: deny → allow\n` +
      `  recorded reasons:  ${held[0]!.reasons.join(', ')}\n` +
      `  candidate reasons: disable-sign-in-by-manager\n` +
      '8 replayed, 1 changed\n',
  );
});

test('(c) approval required for hris/read_employee: those decisions become approval_required', () => {
  const requireHr = candidate('hr-reads', (file, text) =>
    file === 'hris.cedar'
      ? `${text}\n@id("hr-approval-for-reads")\n@requires_approval("Role::\\"hr\\"")\nforbid (principal, action == Action::"hris/read_employee", resource)\nunless { context has approver && context.approver in Role::"hr" };\n`
      : text,
  );
  const r = replay(['--dir', requireHr, '--json', exportPath]);
  assert.equal(r.status, 1, r.stderr);
  const lines = r.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  const reads = decisions.filter((d) => d.tool === 'read_employee');
  assert.equal(reads.length, 3);
  assert.deepEqual(
    lines.slice(0, -1),
    reads.map((d) => ({
      seq: d.seq,
      execution_id: d.execution_id,
      recorded: { decision: 'allow', reasons: ['read-employee-for-manager-or-hr'] },
      candidate: { decision: 'approval_required', reasons: ['hr-approval-for-reads'] },
    })),
  );
  assert.deepEqual(lines.at(-1), { replayed: 8, changed: 3 });
});

test('the entities as they stood: a hold put between decisions counts from that point only', () => {
  // A candidate that denies while the subject is not active: only decisions after the first admin PUT
  // (status termination_delayed) change, so the PUT was replayed at its point in history.
  const notActive = candidate('not-active', (file, text) =>
    file === 'hris.cedar'
      ? `${text}\n@id("subject-not-active")\nforbid (principal, action, resource is Employee) when { resource.status != "active" };\n`
      : text,
  );
  const r = replay(['--dir', notActive, '--json', exportPath]);
  assert.equal(r.status, 1, r.stderr);
  const changed = r.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l))
    .slice(0, -1)
    .map((c: { seq: number }) => c.seq);
  const exportLines = readFileSync(exportPath, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  const firstPut = exportLines.find((rec) => rec.kind === 'entity' && rec.source === 'api')!.seq;
  assert.deepEqual(
    changed,
    decisions.filter((d) => d.seq > firstPut).map((d) => d.seq),
  );
  assert.ok(changed.length > 0 && changed.length < decisions.length);
});

test('--since / --until select decisions by their clock', () => {
  const dropHold = join(dir, 'no-hold');
  const held = decisions.find((d) => d.reasons.includes('legal-hold'))!;
  const before = replay(['--dir', dropHold, '--until', held.now, exportPath]);
  assert.equal(before.status, 0, before.stderr);
  assert.equal(before.stdout, `${decisions.filter((d) => Date.parse(d.now) < Date.parse(held.now)).length} replayed, 0 changed\n`);
  const from = replay(['--dir', dropHold, '--json', '--since', held.now, '--until', '2026-08-24T10:05:00Z', exportPath]);
  assert.equal(from.status, 1, from.stderr);
  const lines = from.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  assert.equal(lines[0].seq, held.seq);
  assert.deepEqual(lines.at(-1), { replayed: decisions.filter((d) => d.now === held.now).length, changed: 1 });
  const bad = replay(['--dir', dropHold, '--since', 'yesterday', exportPath]);
  assert.equal(bad.status, 2);
  // Digits finer than a millisecond count: a bound a tenth of a millisecond after the held decision's
  // clock leaves it out of --since and keeps it in --until.
  const finer = held.now.replace(/(\.\d{3})?Z$/, (_m: string, ms: string | undefined) => `${ms ?? '.000'}1Z`);
  const afterHeld = replay(['--dir', dropHold, '--json', '--since', finer, exportPath]);
  assert.equal(afterHeld.status, 0, afterHeld.stderr);
  assert.deepEqual(JSON.parse(afterHeld.stdout.trim().split('\n').at(-1)!).replayed, decisions.filter((d) => Date.parse(d.now) > Date.parse(held.now)).length);
  const untilFiner = replay(['--dir', dropHold, '--json', '--until', finer, exportPath]);
  assert.equal(untilFiner.status, 1, untilFiner.stderr);
  assert.deepEqual(JSON.parse(untilFiner.stdout.trim().split('\n').at(-1)!), {
    replayed: decisions.filter((d) => Date.parse(d.now) <= Date.parse(held.now)).length,
    changed: 1,
  });
});

test('(d) a tampered export is refused with its verify code, exit 2; --no-verify replays it', () => {
  const lines = readFileSync(exportPath, 'utf8').split('\n');
  const i = lines.findIndex((l) => l.includes('"decision":"deny"'));
  lines[i] = lines[i]!.replace('"decision":"deny"', '"decision":"allow"');
  const tampered = join(dir, 'tampered.jsonl');
  writeFileSync(tampered, lines.join('\n'));
  const r = replay(['--dir', join(REPO, 'policies'), tampered]);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /refused: .* does not verify: HASH_MISMATCH at seq \d+/);
  assert.equal(r.stdout, '');
  const json = replay(['--dir', join(REPO, 'policies'), '--json', tampered]);
  assert.equal(json.status, 2);
  assert.equal(JSON.parse(json.stdout).error.code, 'HASH_MISMATCH');
  // Unverified, the forged "allow" shows up as a change back to deny.
  const unverified = replay(['--dir', join(REPO, 'policies'), '--no-verify', tampered]);
  assert.equal(unverified.status, 1, unverified.stderr);
  assert.match(unverified.stdout, /allow → deny/);
});

test('--keys / --checkpoint: a truncated export, or one under a foreign key, is refused as writ verify refuses it', () => {
  const policies = join(REPO, 'policies');
  const lines = readFileSync(exportPath, 'utf8')
    .split('\n')
    .filter((l) => l !== '');
  const checkpoints = lines.map((l) => JSON.parse(l)).filter((r) => r.kind === 'checkpoint');
  assert.ok(checkpoints.length >= 2, 'the story writes at least two checkpoints');
  const last = checkpoints.at(-1);
  writeFileSync(join(dir, 'cp.json'), JSON.stringify(last));
  // Cut inside what the last checkpoint covers (seqs 0..size-1): a genuine, self-consistent prefix.
  const truncated = join(dir, 'truncated.jsonl');
  writeFileSync(truncated, `${lines.slice(0, last.size - 1).join('\n')}\n`);
  assert.equal(replay(['--dir', policies, truncated]).status, 0, 'without an anchor the prefix replays');
  const held = replay(['--dir', policies, '--checkpoint', join(dir, 'cp.json'), truncated]);
  assert.equal(held.status, 2, held.stdout);
  assert.match(held.stderr, /does not verify: TRUNCATED/);
  const whole = replay(['--dir', policies, '--keys', join(dir, 'keys.json'), '--checkpoint', join(dir, 'cp.json'), exportPath]);
  assert.equal(whole.status, 0, whole.stderr);
  assert.equal(whole.stdout, '8 replayed, 0 changed\n');
  // A key nobody trusts: the export is refused with UNKNOWN_KEY.
  const { publicKey } = generateKeyPairSync('ed25519');
  const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(-32);
  const foreign = { keys: [{ key_id: `ed25519:${createHash('sha256').update(raw).digest('hex').slice(0, 16)}`, public_key: raw.toString('base64') }] };
  writeFileSync(join(dir, 'foreign.json'), JSON.stringify(foreign));
  const untrusted = replay(['--dir', policies, '--json', '--keys', join(dir, 'foreign.json'), exportPath]);
  assert.equal(untrusted.status, 2);
  assert.equal(JSON.parse(untrusted.stdout).error.code, 'UNKNOWN_KEY');
  // Anchors are checked by verifying: with --no-verify they are a usage error, as is a bad file.
  assert.equal(replay(['--dir', policies, '--no-verify', '--keys', join(dir, 'keys.json'), exportPath]).status, 2);
  const badKeys = replay(['--dir', policies, '--keys', join(dir, 'missing.json'), exportPath]);
  assert.equal(badKeys.status, 2);
  assert.match(badKeys.stderr, /--keys: cannot read/);
});

test('--since not before --until is a usage error; a closed stdout ends the replay quietly', () => {
  const policies = join(REPO, 'policies');
  const r = replay(['--dir', policies, '--since', '2026-08-24T17:00:00+07:00', '--until', '2026-08-24T16:00:00+07:00', exportPath]);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /is not before --until/);
  const dropHold = candidate('no-hold-pipe', (file, text) => (file === 'offboarding.cedar' ? text.slice(0, text.indexOf('@id("legal-hold")')) : text));
  // The reader takes nothing and goes away (head -c 0 exits at once): no stack trace, and the exit
  // code says what was decided before the pipe closed (a change: 1).
  const piped = spawnSync(
    'bash',
    ['-c', `"${process.execPath}" "${WRIT_BIN}" policy replay --dir "${dropHold}" "${exportPath}" | head -c 0; echo "rc=\${PIPESTATUS[0]}"`],
    { encoding: 'utf8' },
  );
  assert.equal(piped.stderr, '');
  assert.equal(piped.stdout, 'rc=1\n');
});

test('a candidate whose policy errors: the deny names its errors in the human form; --json keeps the contract shape', () => {
  const erring = candidate('erring', (file, text) =>
    file === 'hris.cedar' ? `${text}\n@id("reads-missing")\nforbid (principal, action, resource) when { context.no_such_field == 1 };\n` : text,
  );
  const r = replay(['--dir', erring, exportPath]);
  assert.equal(r.status, 1, r.stderr);
  assert.match(r.stdout, /→ deny\n {2}recorded reasons: .*\n {2}candidate reasons: .*\n {2}candidate errors: {2}reads-missing: /);
  const json = replay(['--dir', erring, '--json', exportPath]);
  const changes = json.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l))
    .slice(0, -1);
  assert.ok(changes.length > 0);
  for (const c of changes) assert.deepEqual(Object.keys(c), ['seq', 'execution_id', 'recorded', 'candidate']);
  for (const c of changes) assert.deepEqual(Object.keys(c.candidate), ['decision', 'reasons']);
});

test('bad input exits 2: a missing export, a candidate that does not load, usage', () => {
  assert.equal(replay(['--dir', join(REPO, 'policies'), join(dir, 'missing.jsonl')]).status, 2);
  const broken = candidate('broken', (file, text) => (file === 'hris.cedar' ? `${text}\npermit (` : text));
  const r = replay(['--dir', broken, exportPath]);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /do not load/);
  assert.equal(r.stdout, '');
  // With --json the refusal is on stdout too, as one line a script can read.
  const rj = replay(['--dir', broken, '--json', exportPath]);
  assert.equal(rj.status, 2);
  const line = JSON.parse(rj.stdout);
  assert.equal(line.error.code, 'POLICY_INVALID');
  assert.ok(Array.isArray(line.error.details) && line.error.details.length > 0);
  assert.equal(replay(['--dir', join(REPO, 'policies')]).status, 2);
  // The candidate is never implied: without --dir (even where ./policies exists) it is a usage error.
  const noDir = spawnSync(process.execPath, [WRIT_BIN, 'policy', 'replay', exportPath], { cwd: REPO, encoding: 'utf8' });
  assert.equal(noDir.status, 2, noDir.stdout);
  assert.match(noDir.stderr, /--dir CANDIDATE/);
  // The candidate's entities.json is not used (entities come from the export), so a broken one is no obstacle.
  const brokenEntities = candidate('broken-entities', (_file, text) => text, { 'entities.json': '{not json' });
  const unaffected = replay(['--dir', brokenEntities, exportPath]);
  assert.equal(unaffected.status, 0, unaffected.stderr);
  assert.equal(unaffected.stdout, '8 replayed, 0 changed\n');
  const help = replay(['--help']);
  assert.equal(help.status, 0);
  assert.match(help.stdout, /usage: writ policy replay/);
});
