/**
 * The auditor console in a real browser (Debian's Chromium driven by playwright-core) against a real
 * sidecar: sign in (a wrong token shows `unauthorized`), an execution's timeline checked against the
 * API, `Verify` on every record (independently of the server's verifier), tampered proofs, records
 * and signatures caught in flight, the ledger's filters, paging and chart — with no request leaving
 * the sidecar's origin and no console error. The screenshots go to the test's temp dir, or to
 * WRIT_SCREENSHOT_DIR when `npm run docs:screenshots` (scripts/screenshots.mjs) refreshes the docs'
 * pictures, so `npm test` never modifies the checkout.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Locator, Page } from 'playwright-core';
import { createHash } from 'node:crypto';
import { call, offboardingBody, startTestServer, type TestServer } from '../helpers/server.js';
import { jcs } from '../../src/util/canonical.js';
import { readKeyFile, SIGNING_KEY_FILE, signingKeyFromSeed } from '../../src/checkpoints/keys.js';
import { checkpointPayload, keyPayload, signPayload } from '../../src/ledger/signing.js';
import { findChromium, launchChromium, NO_CHROMIUM, watchPage } from './browser.js';
import { runBackgroundTraffic, runOffboardingStory, STORY_ACTOR, STORY_EXECUTION } from './story.js';

interface Rec {
  seq: number;
  kind: string;
  ts: string;
  hash: string;
  [k: string]: unknown;
}

const chromiumPath = findChromium();
if (!chromiumPath) process.stderr.write(`SKIP: ${NO_CHROMIUM}\n`);

let dir: string;
let server: TestServer;
let browser: Browser;
let page: Page;
const requests: string[] = [];
const consoleErrors: string[] = [];

/** Where the screenshots go: the docs' folder only when asked to refresh it. */
const screenshot = (name: string) => join(process.env.WRIT_SCREENSHOT_DIR ?? dir, name);

const at = (t: string) => writeFileSync(join(dir, 'now'), t);
// The timer would write checkpoints at random moments; the test places them itself (stop = checkpoint).
const config = { checkpoint: { every_records: 100000, every_ms: 3_600_000 } };

async function allRecords(filters = ''): Promise<Rec[]> {
  const out: Rec[] = [];
  let from: number | null = 0;
  while (from !== null) {
    const r = await call(server, 'GET', `/v1/ledger/records?from=${from}&limit=1000${filters}`, { token: server.tokens.auditor });
    assert.equal(r.status, 200, r.text);
    out.push(...r.body.records);
    from = r.body.next;
  }
  return out;
}

/** Waits until the ledger table shows exactly these seqs, top to bottom. */
async function waitForRows(seqs: number[]): Promise<void> {
  await page.waitForFunction(
    (want) => JSON.stringify([...document.querySelectorAll('table.ledger tbody tr')].map((r) => Number((r as HTMLElement).dataset.seq))) === want,
    JSON.stringify(seqs),
    { timeout: 15_000 },
  );
}

/** A record's leaf hash (docs/protocol.md §6), for a forged record that is to pass the hash check. */
const leafHashOf = (body: unknown) =>
  `sha256:${createHash('sha256')
    .update(Buffer.concat([Buffer.of(0), Buffer.from(jcs(body))]))
    .digest('hex')}`;

const newestFirst = (records: Rec[], n = 50) =>
  records
    .slice(-n)
    .map((r) => r.seq)
    .reverse();

async function verdictOf(item: Locator): Promise<string> {
  await item.getByRole('button', { name: 'Verify', exact: true }).click();
  const status = item.getByRole('status');
  await status.filter({ hasText: /^(verified|not yet checkpointed|NOT verified: .+)$/ }).waitFor({ timeout: 15_000 });
  return (await status.textContent())!.replace(/^✔ /, '');
}

before(async () => {
  if (!chromiumPath) return;
  dir = mkdtempSync(join(tmpdir(), 'writ-console-'));
  const dataDir = join(dir, 'data');
  mkdirSync(dataDir);
  at('2026-08-24T15:30:00+07:00');
  // First life: the story and some traffic; SIGTERM writes a checkpoint covering all of it.
  const first = await startTestServer({ clockFile: join(dir, 'now'), dataDir, config });
  try {
    await runOffboardingStory(first, at);
    await runBackgroundTraffic(first, at, 75);
    // And one AuthZEN evaluation (by the pep, about its own subject): a decision record with no server,
    // tool or execution, which the Ledger view must still describe.
    const asked = await call(first, 'POST', '/access/v1/evaluation', {
      token: first.tokens.pep,
      body: { subject: { type: 'Agent', id: 'offboarding-agent-prod' }, action: { name: 'hris/read_employee' }, resource: { type: 'Employee', id: '7721' } },
    });
    assert.equal(asked.status, 200, asked.text);
  } finally {
    assert.equal(await first.stop({ keepData: true }), 0);
  }
  // Second life: one more record of the story's execution (a refusal: it is terminal) lies past the checkpoint.
  server = await startTestServer({ clockFile: join(dir, 'now'), dataDir, config });
  const late = await call(server, 'POST', '/v1/decisions', { token: server.tokens.pep, body: offboardingBody() });
  assert.equal(late.status, 409, late.text);
  assert.equal(late.body.error.code, 'EXECUTION_TERMINAL');

  browser = await launchChromium(chromiumPath);
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, timezoneId: 'Asia/Bangkok', locale: 'en-GB' });
  page = await context.newPage();
  watchPage(page, requests, consoleErrors);
});

after(async () => {
  await browser?.close();
  await server?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test('the auditor console in Chromium', { skip: chromiumPath ? false : NO_CHROMIUM }, async (t) => {
  const origin = new URL(server.url).origin;
  const token = server.tokens.auditor;

  await t.test('a wrong token shows unauthorized and no data', async () => {
    await page.goto(`${server.url}/console`);
    assert.equal(new URL(page.url()).pathname, '/console/', 'GET /console redirects to /console/');
    await page.getByLabel('Auditor token').fill('not-the-auditor-token');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText('unauthorized', { exact: true }).waitFor();
    assert.equal(await page.getByLabel('Execution id').count(), 0);
    assert.equal(await page.locator('table, ol').count(), 0);
    // A valid token of another role is no auditor either.
    await page.getByLabel('Auditor token').fill(server.tokens.pep);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText('checking…').waitFor({ state: 'detached' });
    assert.equal(await page.getByRole('alert').textContent(), 'unauthorized');
    // A token that cannot even be a header value (a control character, an emoji) is no auditor's either.
    for (const odd of [`${token}\u0001`, `${token}😀`]) {
      await page.getByLabel('Auditor token').fill(odd);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByText('checking…').waitFor({ state: 'detached' });
      assert.equal(await page.getByRole('alert').textContent(), 'unauthorized', JSON.stringify(odd));
    }
  });

  await t.test('signing in keeps the token in memory only', async () => {
    await page.getByLabel('Auditor token').fill(token);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByLabel('Execution id').waitFor();
    const stored = await page.evaluate(() => ({ local: localStorage.length, session: sessionStorage.length, cookie: document.cookie }));
    assert.deepEqual(stored, { local: 0, session: 0, cookie: '' });
  });

  const view = (await call(server, 'GET', `/v1/executions/${encodeURIComponent(STORY_EXECUTION)}?actor=${encodeURIComponent(STORY_ACTOR)}`, { token })).body;
  const checkpoint = (await call(server, 'GET', '/v1/ledger/checkpoint', { token })).body as Rec;
  const timeline = page.getByRole('list', { name: 'Timeline' });
  const items = timeline.getByRole('listitem');

  await t.test('the execution timeline matches the API', async () => {
    await page.getByLabel('Execution id').fill('OFF-0000:nothing');
    await page.getByLabel('Actor').fill(STORY_ACTOR);
    await page.getByRole('button', { name: 'Show' }).click();
    await page.getByText('EXECUTION_NOT_FOUND: no execution OFF-0000:nothing').waitFor();
    await page.getByLabel('Actor').fill('offboarding-agent-prod');
    await page.getByRole('button', { name: 'Show' }).click();
    await page.getByText('Actor must be Type::"id"').waitFor();
    await page.getByLabel('Execution id').fill(STORY_EXECUTION);
    await page.getByLabel('Actor').fill(STORY_ACTOR);
    await page.getByRole('button', { name: 'Show' }).click();
    await timeline.waitFor();
    const records: Rec[] = [];
    for (const seq of view.records) records.push((await call(server, 'GET', `/v1/ledger/records/${seq}`, { token })).body);
    assert.deepEqual(
      records.map((r) => r.kind),
      ['decision', 'approval', 'decision', 'decision', 'approval', 'decision', 'approval', 'decision', 'outcome', 'refusal'],
    );
    assert.equal(await items.count(), records.length);
    const shown = await items.evaluateAll((els) => els.map((e) => [Number((e as HTMLElement).dataset.seq), (e as HTMLElement).dataset.kind]));
    assert.deepEqual(
      shown,
      records.map((r) => [r.seq, r.kind]),
    );
    for (const [i, r] of records.entries()) {
      const text = (await items.nth(i).textContent())!;
      assert.ok(text.includes(`#${r.seq}`) && text.includes(r.kind), `item ${i} names its seq and kind: ${text}`);
      if (r.kind === 'decision') {
        assert.ok(text.includes(String(r.decision)), `decision ${String(r.seq)} shows ${String(r.decision)}`);
        for (const reason of r.reasons as string[]) assert.ok(text.includes(reason), `decision ${r.seq} shows reason ${reason}`);
      }
      const time = items.nth(i).locator('time').first();
      assert.equal(await time.getAttribute('datetime'), r.ts);
      // The time is shown exactly as the ledger holds it; the seq and the kind each in an element of
      // their own, so a lookup by exact text finds them.
      assert.equal(await time.textContent(), r.ts);
      assert.equal(await items.nth(i).getByText(String(r.seq), { exact: true }).count(), 1, `item ${i}: its seq alone`);
      assert.equal(await items.nth(i).getByText(String(r.kind), { exact: true }).first().textContent(), r.kind);
    }
    const allow = records.find((r) => r.decision === 'allow')!;
    assert.ok((await items.nth(records.indexOf(allow)).textContent())!.includes(String(allow.approval_used)));
    // The current state and the approvals with their validity.
    await page.getByText('committed', { exact: true }).first().waitFor();
    const approvals = page.locator('table.approvals tbody tr');
    assert.equal(await approvals.count(), view.approvals.length);
    for (const [i, a] of (view.approvals as Array<{ valid: boolean; invalid_reason?: string }>).entries()) {
      assert.ok((await approvals.nth(i).textContent())!.includes(a.valid ? 'valid' : `invalid: ${a.invalid_reason}`));
    }
  });

  await t.test('Verify proves each record in the browser', async () => {
    const count = await items.count();
    for (let i = 0; i < count; i++) {
      const seq = view.records[i] as number;
      const verdict = await verdictOf(items.nth(i));
      assert.equal(verdict, seq < (checkpoint.size as number) ? 'verified' : 'not yet checkpointed', `record ${seq}`);
    }
    assert.equal(await items.last().getByRole('status').textContent(), 'not yet checkpointed');
    await page.screenshot({ path: screenshot('console-execution.png'), fullPage: true });
  });

  await t.test('a tampered proof, record or signature is NOT verified', async () => {
    const first = items.first();
    await page.route('**/v1/ledger/proofs/inclusion?*', async (route) => {
      const res = await route.fetch();
      const proof = await res.json();
      proof.path[0] = (proof.path[0][0] === '0' ? '1' : '0') + proof.path[0].slice(1);
      await route.fulfill({ response: res, json: proof });
    });
    assert.equal(await verdictOf(first), 'NOT verified: the inclusion proof does not lead to the checkpoint root');
    await page.unrouteAll();
    for (const field of ['leaf', 'root']) {
      await page.route('**/v1/ledger/proofs/inclusion?*', async (route) => {
        const res = await route.fetch();
        const proof = await res.json();
        proof[field] = `sha256:${'ab'.repeat(32)}`;
        await route.fulfill({ response: res, json: proof });
      });
      assert.equal(await verdictOf(first), `NOT verified: the inclusion proof names another ${field}`);
      await page.unrouteAll();
    }

    // A record altered on its way to the page, once only: Verify proves the very record drawn (which
    // now reads `allow`), never a second, honest copy fetched for the proof.
    let altered = 0;
    await page.route(`**/v1/ledger/records/${view.records[0]}`, async (route) => {
      const res = await route.fetch();
      const text = altered++ === 0 ? (await res.text()).replace('"approval_required"', '"allow"') : await res.text();
      await route.fulfill({ response: res, body: text });
    });
    await page.getByRole('button', { name: 'Show' }).click();
    await page.waitForFunction(() => document.querySelector('ol.timeline li .decision')?.textContent === 'allow');
    assert.equal(await verdictOf(first), 'NOT verified: record hash mismatch');
    await page.unrouteAll();
    assert.equal(altered, 1, 'the record was fetched once, to be drawn');
    await page.getByRole('button', { name: 'Show' }).click();
    await page.waitForFunction(() => document.querySelector('ol.timeline li .decision')?.textContent === 'approval_required');

    await page.route('**/v1/ledger/checkpoint', async (route) => {
      const res = await route.fetch();
      const cp = await res.json();
      cp.size = cp.size - 1; // a checkpoint claiming another size no longer matches its signature
      await route.fulfill({ response: res, json: cp });
    });
    assert.match(await verdictOf(first), /^NOT verified: /);
    await page.unrouteAll();

    // A forged checkpoint that would leave the record outside it (size 1, its hash even recomputed)
    // is proved before its size is believed: NOT verified, not "not yet checkpointed".
    await page.route('**/v1/ledger/checkpoint', async (route) => {
      const res = await route.fetch();
      const cp = await res.json();
      cp.size = 1;
      const { hash: _old, ...body } = cp;
      cp.hash = leafHashOf(body);
      await route.fulfill({ response: res, json: cp });
    });
    assert.equal(await verdictOf(first), 'NOT verified: bad checkpoint signature');
    await page.unrouteAll();

    // A key record, genuinely signed by the ledger's key, that rotated it out just before the latest
    // checkpoint: that checkpoint is then signed by a retired key, which writ verify calls UNKNOWN_KEY.
    const current = readKeyFile(join(server.dataDir, SIGNING_KEY_FILE));
    const next = signingKeyFromSeed(new Uint8Array(32).fill(9));
    const latest = (await call(server, 'GET', '/v1/ledger/checkpoint', { token: server.tokens.auditor })).body;
    await page.route('**/v1/ledger/records?*kind=key*', async (route) => {
      const res = await route.fetch();
      const listing = await res.json();
      const body = {
        v: 1,
        seq: latest.seq - 1,
        ts: '2026-08-24T10:00:00Z',
        kind: 'key',
        prev: `sha256:${'0'.repeat(64)}`,
        key_id: next.key_id,
        public_key: next.public_key,
        signature: signPayload(current.privateKey, keyPayload({ key_id: next.key_id, public_key: next.public_key })),
      };
      listing.records.push({ ...body, hash: leafHashOf(body) });
      await route.fulfill({ response: res, json: listing });
    });
    assert.equal(
      await verdictOf(first),
      `NOT verified: the checkpoint is signed by key ${current.key_id}, but the key in force at seq ${latest.seq} is ${next.key_id} (key record ${latest.seq - 1})`,
    );
    await page.unrouteAll();

    // Checkpoints genuinely signed by the ledger's key but at odds with the one this page verified
    // before: an older one (a rollback), another root for the same size (a fork), and a larger one
    // that does not extend it (its consistency proof fails).
    const sizeNow = latest.size as number;
    const olderRoot = (await call(server, 'GET', `/v1/ledger/proofs/consistency?from=${sizeNow - 5}&to=${sizeNow}`, { token: server.tokens.auditor })).body
      .from_root;
    const signedCheckpoint = (size: number, root: string) => {
      const body = { ...latest, size, root, signature: signPayload(current.privateKey, checkpointPayload({ key_id: current.key_id, root, size })) };
      delete body.hash;
      return { ...body, hash: leafHashOf(body) };
    };
    const forgedRoot = `sha256:${'cd'.repeat(32)}`;
    for (const [forged, why] of [
      [
        signedCheckpoint(sizeNow - 5, olderRoot),
        `the sidecar served checkpoint size ${sizeNow - 5}, older than size ${sizeNow} that this page verified before (a rollback)`,
      ],
      [signedCheckpoint(sizeNow, forgedRoot), `two checkpoints of size ${sizeNow} with different roots (a fork)`],
      [signedCheckpoint(sizeNow + 1, forgedRoot), `the checkpoint of size ${sizeNow + 1} does not extend the one of size ${sizeNow} this page verified before`],
    ] as const) {
      await page.route('**/v1/ledger/checkpoint', (route) => route.fulfill({ json: forged }));
      assert.equal(await verdictOf(first), `NOT verified: ${why}`);
      await page.unrouteAll();
    }
    // No checkpoint at all (a 404, or a null body) after this page verified one is a rollback too,
    // not "not yet checkpointed".
    const noCheckpoint = `NOT verified: the sidecar served no checkpoint, but this page verified one of size ${sizeNow} before (a rollback)`;
    const errorsBefore = consoleErrors.length;
    await page.route('**/v1/ledger/checkpoint', (route) =>
      route.fulfill({ status: 404, json: { error: { code: 'NOT_FOUND', message: 'no checkpoint yet' } } }),
    );
    assert.equal(await verdictOf(first), noCheckpoint);
    await page.unrouteAll();
    // Chromium logs the 404 this test served on purpose; only that one is taken off the list.
    assert.deepEqual(consoleErrors.splice(errorsBefore), ['Failed to load resource: the server responded with a status of 404 (Not Found)']);
    await page.route('**/v1/ledger/checkpoint', (route) => route.fulfill({ json: null }));
    assert.equal(await verdictOf(first), noCheckpoint);
    await page.unrouteAll();

    assert.equal(await verdictOf(first), 'verified');
  });

  await t.test('records the sidecar lists that name another execution are flagged, not drawn', async () => {
    const other = (await allRecords('&kind=decision')).find((r) => r.execution_id !== STORY_EXECUTION)!;
    await page.route('**/v1/executions/**', async (route) => {
      const res = await route.fetch();
      const body = await res.json();
      body.records = [...body.records, other.seq];
      await route.fulfill({ response: res, json: body });
    });
    await page.getByRole('button', { name: 'Show' }).click();
    await page.getByText(`of another execution here (#${other.seq}): not shown.`).waitFor();
    assert.equal(await items.count(), view.records.length);
    assert.equal(await timeline.locator(`li[data-seq="${other.seq}"]`).count(), 0);
    await page.unrouteAll();
    // A record served in another's place (#b asked, #a answered) would show #a twice and hide #b: refused.
    const [a, b] = view.records as number[];
    await page.route(`**/v1/ledger/records/${b}`, async (route) => {
      const res = await route.fetch({
        url: route
          .request()
          .url()
          .replace(new RegExp(`/${b}$`), `/${a}`),
      });
      await route.fulfill({ response: res });
    });
    await page.getByRole('button', { name: 'Show' }).click();
    await page.getByText(`MALFORMED: the sidecar answered record #${b} with record #${a}`).waitFor();
    assert.equal(await items.count(), 0);
    await page.unrouteAll();
    await page.getByRole('button', { name: 'Show' }).click();
    await page.waitForFunction((n) => document.querySelectorAll('ol.timeline > li').length === n, view.records.length);
    assert.equal(await page.getByRole('alert').count(), 0);
  });

  await t.test('Prove every record presses each Verify in turn', async () => {
    const proveAll = page.getByRole('button', { name: 'Prove every record' });
    await proveAll.click();
    // The button is disabled for the whole run (the handler disables it before any await).
    await page.waitForFunction(() => [...document.querySelectorAll('button')].some((b) => b.textContent === 'Prove every record' && !b.disabled), undefined, {
      timeout: 30_000,
    });
    await page.waitForFunction(
      (n) => {
        const texts = [...document.querySelectorAll('ol.timeline .verdict')].map((e) => e.textContent);
        return texts.length === n && texts.every((x) => x === 'verified' || x === 'not yet checkpointed');
      },
      view.records.length,
      { timeout: 30_000 },
    );
    const verdicts = await items.getByRole('status').allTextContents();
    assert.deepEqual(
      verdicts,
      view.records.map((seq: number) => (seq < (checkpoint.size as number) ? 'verified' : 'not yet checkpointed')),
    );
  });

  await t.test('the Ledger view: rows, paging, filters and the chart', async () => {
    await page.getByRole('link', { name: 'Ledger' }).click();
    assert.equal(await page.getByLabel('Execution id').count(), 1, 'only the ledger view is in the page');
    const all = await allRecords();
    await waitForRows(newestFirst(all));
    const firstRow = page.locator('table.ledger tbody tr').first();
    const top = all[all.length - 1]!;
    assert.ok((await firstRow.textContent())!.includes(String(top.seq)) && (await firstRow.textContent())!.includes(top.kind));

    // Rows can be proved too: the newest (past the checkpoint) and one before it.
    const rows = page.locator('table.ledger tbody tr');
    assert.equal(await verdictOf(rows.first()), 'not yet checkpointed');
    assert.equal(await verdictOf(rows.nth(2)), 'verified');

    // Paging back and forth.
    await page.getByRole('button', { name: 'Older' }).click();
    await waitForRows(newestFirst(all.slice(0, -50)));
    await page.getByRole('button', { name: 'Newer' }).click();
    await waitForRows(newestFirst(all));

    // The chart counts the decisions by outcome.
    const chart = page.getByRole('img', { name: 'Decisions per minute' });
    assert.equal(await page.getByText('Decisions per minute').count(), 1, 'the caption is the one element with that text');
    await chart.waitFor();
    assert.ok((await chart.locator('rect.bar').count()) > 0, 'the chart draws bars');
    for (const outcome of ['allow', 'deny', 'approval_required']) assert.ok((await chart.locator(`rect.bar-${outcome}`).count()) > 0, `bars for ${outcome}`);
    await page.screenshot({ path: screenshot('console-ledger.png'), fullPage: false });

    await page.getByLabel('Kind').selectOption('approval');
    await waitForRows(newestFirst(await allRecords('&kind=approval')));
    await page.getByLabel('Kind').selectOption('');
    // A script may type the kind instead (fill): the select takes the typed name, and clearing it means any.
    await page.getByLabel('Kind').fill('outcome');
    assert.equal(await page.getByLabel('Kind').inputValue(), 'outcome');
    await waitForRows(newestFirst(await allRecords('&kind=outcome')));
    await page.getByLabel('Kind').fill('');
    assert.equal(await page.getByLabel('Kind').inputValue(), '');
    await waitForRows(newestFirst(await allRecords()));
    await page.getByLabel('Actor').pressSequentially('Agent::"off');
    await page.getByText('Actor must be Type::"id"').waitFor();
    await page.getByLabel('Actor').fill(STORY_ACTOR);
    await waitForRows(newestFirst(await allRecords(`&actor=${encodeURIComponent(STORY_ACTOR)}`)));
    await page.getByLabel('Actor').fill('');
    await page.getByLabel('Execution id').fill(STORY_EXECUTION);
    await page.getByLabel('Execution id').dispatchEvent('change');
    const story = await allRecords(`&execution_id=${encodeURIComponent(STORY_EXECUTION)}`);
    assert.deepEqual(
      story.map((r) => r.seq),
      view.records,
    );
    await waitForRows(newestFirst(story));
    await page.getByLabel('Kind').selectOption('decision');
    await waitForRows(newestFirst(story.filter((r) => r.kind === 'decision')));

    // Typed into a filter, applied while typing, then a row's Verify clicked straight away: the field's
    // change event (on losing focus) brings nothing new, so the rows are not reloaded under the verdict.
    await page.getByLabel('Kind').selectOption('');
    await page.getByLabel('Execution id').fill('');
    await waitForRows(newestFirst(await allRecords()));
    await page.getByLabel('Actor').fill(STORY_ACTOR);
    await waitForRows(newestFirst(await allRecords(`&actor=${encodeURIComponent(STORY_ACTOR)}`)));
    let reloads = 0;
    // (Verify itself lists the ledger's key records: `kind=key`.)
    const countReloads = (req: { url(): string }) => {
      if (req.url().includes('/v1/ledger/records?') && !req.url().includes('kind=key')) reloads++;
    };
    page.on('request', countReloads);
    // The newest row lies past the checkpoint; the one before it is covered.
    const proved = page.locator('table.ledger tbody tr').nth(1);
    assert.equal(await page.getByLabel('Actor').evaluate((e) => e === document.activeElement), true, 'the filter still has the focus');
    // What the pager says just after the app's own change listener ran (this one is added after it): a reload
    // starts there, synchronously ('loading…'), and that listener also cancels the typing pause, so nothing
    // else can start one later.
    type Armed = { pagerAfterChange?: Promise<string> };
    await page.getByLabel('Actor').evaluate((e) => {
      (window as Armed).pagerAfterChange = new Promise((resolve) =>
        e.addEventListener('change', () => resolve(document.querySelector('.pager [role=status]')?.textContent ?? ''), { once: true }),
      );
    });
    assert.equal(await verdictOf(proved), 'verified');
    assert.notEqual(await page.evaluate(() => (window as Armed).pagerAfterChange), 'loading…', 'the change event started no reload');
    assert.equal(await proved.getByRole('status').textContent(), 'verified', 'the verdict stays');
    assert.equal(reloads, 0, 'no reload of the rows');
    page.off('request', countReloads);
    await page.getByLabel('Actor').fill('');
    await waitForRows(newestFirst(await allRecords()));
  });

  await t.test('an AuthZEN decision row names its subject, action, resource, asker and reasons', async () => {
    const [authzen] = (await allRecords('&kind=decision')).filter((r) => r.api === 'authzen');
    assert.ok(authzen, 'the AuthZEN evaluation is in the ledger');
    await page.getByLabel('Kind').selectOption('decision');
    const row = page.locator('table.ledger tbody tr').filter({ hasText: 'AuthZEN' }).first();
    await row.waitFor();
    const text = (await row.textContent())!;
    assert.ok(text.includes(String(authzen.seq)), text);
    assert.ok(text.includes('Agent::"offboarding-agent-prod" hris/read_employee Employee::"7721"'), text);
    assert.ok(text.includes('asked by Agent::"offboarding-agent-prod"'), text);
    for (const reason of authzen.reasons as string[]) assert.ok(text.includes(reason), `${reason} in ${text}`);
    await page.getByLabel('Kind').selectOption('');
    await waitForRows(newestFirst(await allRecords()));
  });

  await t.test('back on the Ledger tab, the records shown are the newest ones', async () => {
    await page.getByLabel('Kind').selectOption('');
    await page.getByLabel('Execution id').fill('');
    await page.getByLabel('Execution id').dispatchEvent('change');
    await waitForRows(newestFirst(await allRecords()));
    await page.getByRole('link', { name: 'Execution' }).click();
    const fresh = await call(server, 'POST', '/v1/decisions', { token: server.tokens.pep, body: offboardingBody({ execution_id: 'CONSOLE-after-tab' }) });
    assert.equal(fresh.status, 200, fresh.text);
    await page.getByRole('link', { name: 'Ledger' }).click();
    const all = await allRecords();
    assert.equal(all[all.length - 1]!.seq, fresh.body.record.seq);
    await waitForRows(newestFirst(all));
  });

  await t.test('a supersede race: the loser shows its refusal, the superseded and the winner link each other', async () => {
    const decide = (execution_id: string, supersedes: string | null) =>
      call(server, 'POST', '/v1/decisions', {
        token: server.tokens.pep,
        body: offboardingBody({ execution_id, envelope: { task_id: 'OFF-9000', supersedes } }),
      });
    assert.equal((await decide('OFF-9000:first', null)).status, 200);
    assert.equal((await decide('OFF-9000:retry', 'OFF-9000:first')).status, 200);
    const lost = await decide('OFF-9000:second-retry', 'OFF-9000:first');
    assert.equal(lost.status, 409, lost.text);
    assert.equal(lost.body.error.code, 'EXECUTION_SUPERSEDED');
    const [refusal] = await allRecords('&execution_id=OFF-9000:second-retry');
    assert.equal(refusal!.kind, 'refusal');
    assert.equal(refusal!.supersedes, 'OFF-9000:first', 'the refusal says which execution it tried to supersede');

    // The loser was never reserved: its timeline is the refusal, no error.
    await page.getByRole('link', { name: 'Execution' }).click();
    // The Ledger tab has its own "Execution id" and "Actor" fields: fill only once the Execution form
    // has replaced it (its Show button is there), or the values land in the Ledger's filters.
    await page.getByRole('button', { name: 'Show' }).waitFor();
    await page.getByLabel('Execution id').fill('OFF-9000:second-retry');
    await page.getByLabel('Actor').fill(STORY_ACTOR);
    await page.getByRole('button', { name: 'Show' }).click();
    await page.getByText('never reserved', { exact: true }).waitFor();
    assert.deepEqual(await items.evaluateAll((els) => els.map((e) => [Number((e as HTMLElement).dataset.seq), (e as HTMLElement).dataset.kind])), [
      [refusal!.seq, 'refusal'],
    ]);
    assert.equal(await page.getByRole('alert').count(), 0);
    assert.equal(await verdictOf(items.first()), 'not yet checkpointed');
    // Its refusal links to the execution it tried to supersede, whose timeline links to the winner.
    await items.first().getByRole('link', { name: 'OFF-9000:first' }).click();
    await page.getByText('superseded by', { exact: true }).waitFor();
    const superseded = page.locator('.facts');
    assert.equal(await superseded.getByRole('link', { name: 'OFF-9000:retry' }).count(), 1);
    const first = (await call(server, 'GET', `/v1/executions/OFF-9000%3Afirst?actor=${encodeURIComponent(STORY_ACTOR)}`, { token })).body;
    // The binding and envelope digest are shown whole, as an auditor compares them.
    assert.equal(await superseded.getByText(first.binding, { exact: true }).count(), 1);
    assert.equal(await superseded.getByText(first.envelope_digest, { exact: true }).count(), 1);
    await superseded.getByRole('link', { name: 'OFF-9000:retry' }).click();
    await page.getByText('supersedes', { exact: true }).waitFor();
    assert.equal(await page.locator('.facts').getByRole('link', { name: 'OFF-9000:first' }).count(), 1);
  });

  await t.test('the page loaded nothing from elsewhere and logged no error', async () => {
    const foreign = requests.filter((u) => new URL(u).origin !== origin);
    assert.deepEqual(foreign, []);
    assert.ok(
      requests.some((u) => u.endsWith('/console/favicon.svg')),
      'the page serves its own favicon',
    );
    // Not even the refused sign-ins: the console's session check answers 200 either way.
    assert.deepEqual(consoleErrors, []);
  });
});
