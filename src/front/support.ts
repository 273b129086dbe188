/**
 * Whether HTTP fronts can be threads on this Node: a worker thread listens on the shared port with
 * `reusePort` (SO_REUSEPORT), which arrived in Node 22.12 and 23.1. Elsewhere fronts are processes
 * forked by node:cluster (src/front/fronts.ts).
 */
export function frontThreadsSupported(version = process.versions.node): boolean {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  return major > 23 || (major === 23 && minor >= 1) || (major === 22 && minor >= 12);
}
