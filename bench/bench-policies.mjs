// The policy dir the HTTP benchmarks serve (bench/http.mjs, bench/ab.mjs): the bundled policies plus one
// that reads task_id on the benchmarked action, so the distinct workload's calls really differ to Cedar;
// it never matches the bench's task ids, so every call still allows.
import { copyFileSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const BUNDLED = fileURLToPath(new URL('../policies', import.meta.url));

export const BENCH_POLICY = `// bench/http.mjs: makes task_id Cedar-visible on hris/read_employee.
@id("bench-blocked-task")
forbid (principal, action == Action::"hris/read_employee", resource)
when { context.task_id like "*-blocked" };
`;

/** Writes `<dir>/policies` (the bundled files and bench.cedar) and returns its path. */
export function benchPolicyDir(dir) {
  const out = join(dir, 'policies');
  mkdirSync(out);
  for (const f of readdirSync(BUNDLED)) if (statSync(join(BUNDLED, f)).isFile()) copyFileSync(join(BUNDLED, f), join(out, f));
  writeFileSync(join(out, 'bench.cedar'), BENCH_POLICY);
  return out;
}
