/**
 * The gateway's Prometheus metrics (`GET /metrics`, docs/protocol.md §14), on a registry of its own.
 */
import promClient from 'prom-client';

// prom-client is CommonJS; under NodeNext its default import is module.exports.
const { Registry, Counter, Histogram, collectDefaultMetrics } = promClient;

export function gatewayMetrics() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return {
    registry,
    /** tools/call answered, by server and result: `tool` (the tool's own result) or the refusal code. */
    calls: new Counter({
      name: 'writ_gateway_tool_calls_total',
      help: 'tools/call answered, by server and result (tool, or the refusal code)',
      labelNames: ['server', 'result'],
      registers: [registry],
    }),
    /** HTTP requests refused before any MCP message was read, by status and reason. */
    refusals: new Counter({
      name: 'writ_gateway_http_refusals_total',
      help: 'HTTP requests refused by the gateway, by status and reason',
      labelNames: ['status', 'reason'],
      registers: [registry],
    }),
    upstreamLatency: new Histogram({
      name: 'writ_gateway_upstream_seconds',
      help: 'time from a request sent upstream to its answer, by server',
      labelNames: ['server'],
      registers: [registry],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    }),
  };
}
export type GatewayMetrics = ReturnType<typeof gatewayMetrics>;
