/** `writ/pep`: the policy enforcement point — PDP client, McpServer guard, stdio proxy. */
export { PdpClient, type PdpClientOptions } from './client.js';
export { guardMcpServer, type GuardOptions, type GuardableMcpServer } from './guard.js';
export { runProxy, type ProxyOptions } from './proxy.js';
export { parseDefaults, envelopeFromDefaults, resolvePointer, type Defaults } from './context.js';
export { refusalResult, runGuardedCall, type DispatchResult, type CallAnswer } from './core.js';
export * from './types.js';
