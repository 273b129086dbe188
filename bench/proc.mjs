// CPU accounting from /proc for the HTTP benchmarks (bench/http.mjs, bench/authzen.mjs): a server's
// process tree (writ's HTTP fronts are child processes on a Node without SO_REUSEPORT), its threads by
// name, and the whole machine.
import { readdirSync, readFileSync } from 'node:fs';

const clkTck = 100; // getconf CLK_TCK on Linux x86-64

/** A process and its descendants (writ's HTTP fronts are child processes on a Node without SO_REUSEPORT). */
export function processTree(pid) {
  const children = new Map();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1];
      if (!children.has(ppid)) children.set(ppid, []);
      children.get(ppid).push(name);
    } catch {
      /* gone */
    }
  }
  const out = [];
  const walk = (p) => {
    out.push(String(p));
    for (const c of children.get(String(p)) ?? []) walk(c);
  };
  walk(pid);
  return out;
}
/** CPU seconds of a process and its descendants. */
export function procCpuSeconds(pid) {
  let total = 0;
  let found = false;
  for (const p of processTree(pid)) {
    try {
      const stat = readFileSync(`/proc/${p}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      total += (Number(f[11]) + Number(f[12])) / clkTck;
      found = true;
    } catch {
      /* gone */
    }
  }
  return found ? total : null;
}
/** CPU seconds per thread of a process and its descendants, by thread name (names summed; a child
 *  process's main thread is "front process"). */
export function threadCpuSeconds(pid) {
  const out = {};
  for (const p of processTree(pid)) {
    try {
      for (const tid of readdirSync(`/proc/${p}/task`)) {
        try {
          const stat = readFileSync(`/proc/${p}/task/${tid}/stat`, 'utf8');
          const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
          const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
          // The first thread is the event loop whatever its name.
          const key = tid === String(pid) ? 'event loop' : tid === p ? 'front process' : name;
          out[key] = (out[key] ?? 0) + (Number(f[11]) + Number(f[12])) / clkTck;
        } catch {
          /* thread gone */
        }
      }
    } catch {
      /* process gone */
    }
  }
  return out;
}
/** CPU seconds the whole machine has spent busy (all cores, /proc/stat), or null off Linux. */
export function machineBusySeconds() {
  try {
    const f = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
    const [user, nice, system, , , irq, softirq, steal] = f;
    return (user + nice + system + irq + softirq + steal) / clkTck;
  } catch {
    return null;
  }
}
