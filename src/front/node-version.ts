/**
 * Whether HTTP fronts can be threads on this Node: a worker thread listens on the shared port with
 * `reusePort` (SO_REUSEPORT), which arrived in Node 22.12 and 23.1. Elsewhere fronts are processes
 * forked by node:cluster (src/front/fronts.ts).
 */
export function frontThreadsSupported(version = process.versions.node): boolean {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  return major > 23 || (major === 23 && minor >= 1) || (major === 22 && minor >= 12);
}

/**
 * Whether `count` fronts run as threads. A single front shares the port with nobody, so it listens on it
 * alone and needs no SO_REUSEPORT: it is a thread on every Node (the default on 2 cores). A thread
 * hands its asks to the ledger writer by postMessage; a cluster process serializes them over a pipe,
 * and its repeated decisions cost more CPU on Node 20 for that.
 */
export function frontsAreThreads(count: number, version = process.versions.node): boolean {
  return count === 1 || frontThreadsSupported(version);
}
