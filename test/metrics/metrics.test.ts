import { test } from 'node:test';
import assert from 'node:assert/strict';
import promClient from 'prom-client';
import {
  decisionLatency,
  decisionsTotal,
  executionsByState,
  httpRequests,
  ledgerRecords,
  metricsContentType,
  policyReloads,
  refusalsTotal,
  registry,
  renderMetrics,
} from '../../src/metrics/metrics.js';

test('metrics: render Prometheus text with every writ metric and the process metrics', async () => {
  decisionsTotal.inc({ decision: 'allow' });
  decisionsTotal.inc({ decision: 'deny' }, 2);
  refusalsTotal.inc({ code: 'ENVELOPE_INVALID' });
  decisionLatency.observe(0.0004);
  decisionLatency.observe(0.003);
  ledgerRecords.set(42);
  policyReloads.inc({ result: 'ok' });
  policyReloads.inc({ result: 'failed' });
  executionsByState.set({ state: 'invoking' }, 3);
  httpRequests.inc({ route: '/v1/decisions', status: '200' });
  const text = await renderMetrics();
  for (const name of [
    'writ_decisions_total',
    'writ_refusals_total',
    'writ_decision_latency_seconds',
    'writ_ledger_records',
    'writ_policy_reloads_total',
    'writ_policy_polls_total',
    'writ_executions',
    'writ_http_requests_total',
    'writ_decision_memo_lookups_total',
    'writ_decision_residual_answers_total',
    'writ_checkpoints_written_total',
    'writ_signing_key_retired',
  ]) {
    assert.match(text, new RegExp(`^# TYPE ${name} `, 'm'), name);
  }
  assert.match(text, /^writ_decisions_total\{decision="allow"\} 1$/m);
  assert.match(text, /^writ_decisions_total\{decision="deny"\} 2$/m);
  assert.match(text, /^writ_decisions_total\{decision="approval_required"\} 0$/m);
  assert.match(text, /^writ_refusals_total\{code="ENVELOPE_INVALID"\} 1$/m);
  assert.match(text, /^writ_decision_latency_seconds_bucket\{le="0.0005"\} 1$/m);
  assert.match(text, /^writ_decision_latency_seconds_count 2$/m);
  assert.match(text, /^writ_ledger_records 42$/m);
  assert.match(text, /^writ_policy_reloads_total\{result="failed"\} 1$/m);
  assert.match(text, /^writ_executions\{state="invoking"\} 3$/m);
  assert.match(text, /^writ_executions\{state="reconciled"\} 0$/m);
  assert.match(text, /^writ_http_requests_total\{route="\/v1\/decisions",status="200"\} 1$/m);
  assert.match(text, /^process_cpu_user_seconds_total /m);
  assert.match(text, /^nodejs_heap_size_total_bytes /m);
  assert.match(metricsContentType, /^text\/plain; version=0\.0\.4/);
});

test('metrics: writ registers on its own registry, not the global one', async () => {
  assert.notEqual(registry, promClient.register);
  assert.equal(promClient.register.getSingleMetric('writ_decisions_total'), undefined);
  assert.ok(registry.getSingleMetric('writ_decisions_total'));
});

test('metrics: histogram buckets start at half a millisecond', () => {
  const buckets = (decisionLatency as unknown as { upperBounds: number[] }).upperBounds;
  assert.equal(buckets[0], 0.0005);
  assert.ok(buckets.length >= 10);
});
