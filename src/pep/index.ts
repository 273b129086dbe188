/** `writ/pep`: the policy enforcement point — PDP client, McpServer guard, stdio proxy. */
export { PdpClient, type PdpClientOptions } from './client.js';
export { emitToolEvents, guardMcpServer, type GuardOptions, type GuardableMcpServer } from './guard.js';
export { runProxy, type ProxyOptions } from './proxy.js';
export { parseDefaults, envelopeFromDefaults, resolvePointer, type Defaults } from './context.js';
export { META_EVENTS, refusalResult, runGuardedCall, type DispatchResult, type CallAnswer } from './core.js';
export * from './types.js';
