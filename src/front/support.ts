/** Whether this Node can run HTTP front threads: `reusePort` on listen sockets arrived in Node 22.12 and 23.1. */
export function frontsSupported(version = process.versions.node): boolean {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  return major > 23 || (major === 23 && minor >= 1) || (major === 22 && minor >= 12);
}
