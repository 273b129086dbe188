/**
 * The console's Approvals view in a real browser (docs/protocol.md §17): the HR approver signs in with
 * its own token (a wrong one, or an auditor's, shows `unauthorized`), sees the proposed offboarding call
 * exactly as admitted — subject, tool, arguments, requester, purpose, execute_after, reasons — approves
 * it, and the approval is for exactly that binding and envelope digest: the execute is then allowed.
 * The sidecar runs on the real clock here (the page computes the expiry from its own clock).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser, Page } from 'playwright-core';
import { call, offboardingBody, startTestServer, type TestServer } from '../helpers/server.js';
import { findChromium, launchChromium, NO_CHROMIUM, watchPage } from './browser.js';

const chromiumPath = findChromium();
let server: TestServer;
let browser: Browser;
let page: Page;
const consoleErrors: string[] = [];
const requests: string[] = [];

before(async () => {
  if (!chromiumPath) return;
  server = await startTestServer();
  browser = await launchChromium(chromiumPath);
  page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  watchPage(page, requests, consoleErrors);
});
after(async () => {
  await browser?.close();
  await server?.stop();
});

test('an HR approver sees what it approves and approves it in the console', { skip: chromiumPath ? false : NO_CHROMIUM }, async () => {
  const t = server.tokens;
  const body = offboardingBody({ execution_id: 'OFF-7000:disable-sign-in' });
  const proposed = await call(server, 'POST', '/v1/decisions', { token: t.pep, body });
  assert.equal(proposed.body.decision, 'approval_required', proposed.text);

  await page.goto(`${server.url}/console/`);
  await page.getByRole('link', { name: 'Approvals' }).click();
  for (const wrong of ['not-a-token', t.auditor]) {
    await page.getByLabel('Approver token').fill(wrong);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page
      .getByRole('alert')
      .filter({ hasText: /^unauthorized$/ })
      .waitFor();
    assert.equal(await page.getByRole('button', { name: 'Approve' }).count(), 0);
  }
  await page.getByLabel('Approver token').fill(t.approver);
  await page.getByRole('button', { name: 'Sign in' }).click();

  const items = page.getByRole('list', { name: 'Pending approvals' }).getByRole('listitem');
  await items.first().waitFor();
  assert.equal(await items.count(), 1);
  const item = items.first();
  const text = (await item.textContent())!;
  for (const shown of [
    'Employee::"7721"',
    'disable_sign_in',
    '{"employee_id":"7721"}',
    'User::"manager-1842"',
    'scheduled_employee_offboarding',
    'hr-approval-required',
    '2026-08-24T17:00:00+07:00',
  ]) {
    assert.ok(text.includes(shown), `the item shows ${shown}: ${text}`);
  }
  assert.equal(await page.getByLabel('Expires in (hours)').inputValue(), '24');
  await page.getByLabel('Expires in (hours)').fill('2');
  await item.getByRole('button', { name: 'Approve' }).click();
  await item
    .getByRole('status')
    .filter({ hasText: /^approved$/ })
    .waitFor();

  // The approval is the one shown: its binding and digest, by this approver, for about two hours.
  const view = await call(server, 'GET', `/v1/executions/${body.execution_id}?actor=${encodeURIComponent('Agent::"offboarding-agent-prod"')}`, {
    token: t.auditor,
  });
  assert.equal(view.body.approvals.length, 1, view.text);
  const approval = view.body.approvals[0];
  assert.equal(approval.valid, true);
  assert.deepEqual(approval.approver, { type: 'User', id: 'hr-5519' });
  const hours = (Date.parse(approval.expires_at) - Date.parse(approval.approved_at)) / 3600_000;
  assert.ok(hours > 1.9 && hours <= 2.01, `expires in ${hours} h`);
  const executed = await call(server, 'POST', '/v1/decisions', { token: t.pep, body: { ...body, phase: 'execute' } });
  assert.equal(executed.body.decision, 'allow', executed.text);
  assert.equal(executed.body.approval_used, approval.approval_id);

  const origin = new URL(server.url).origin;
  assert.deepEqual(
    requests.filter((u) => new URL(u).origin !== origin),
    [],
    'nothing loaded from outside the sidecar',
  );
  assert.deepEqual(
    consoleErrors.filter((e) => !/status of 40[13]/.test(e)),
    [],
  );
});
