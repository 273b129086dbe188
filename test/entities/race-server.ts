/** The sidecar the entity race tests drive: a pep, an AuthZEN evaluator, an auditor and an admin. */
import { startTestServer, TEST_TOKENS, type TestServer } from '../helpers/server.js';

export function startRaceServer(evaluatorToken: string): Promise<TestServer> {
  const t = TEST_TOKENS;
  return startTestServer({
    config: {
      tokens: [
        { token: t.pep, role: 'pep', actor: { type: 'Agent', id: 'offboarding-agent-prod' } },
        { token: evaluatorToken, role: 'evaluator' },
        { token: t.auditor, role: 'auditor' },
        { token: t.admin, role: 'admin' },
      ],
    },
  });
}

/** The AuthZEN question both tests ask: may the offboarding agent disable Employee 7721's sign-in? */
export const AUTHZEN_QUESTION = {
  subject: { type: 'Agent', id: 'offboarding-agent-prod' },
  action: { name: 'idp/disable_sign_in' },
  resource: { type: 'Employee', id: '7721' },
};

/**
 * The decisions of an export (JSON Lines) that name another entities_version than the one in force at
 * their place — the version of the last `entity` record before them — described; and how many decisions
 * the export holds.
 */
export function staleDecisions(exportText: string): { decisions: number; stale: string[] } {
  let inForce: string | undefined;
  let decisions = 0;
  const stale: string[] = [];
  for (const line of exportText.trim().split('\n')) {
    const r = JSON.parse(line) as Record<string, any>;
    if (r.kind === 'entity') inForce = r.entities_version;
    if (r.kind !== 'decision') continue;
    decisions++;
    if (inForce !== undefined && r.entities_version !== inForce)
      stale.push(`seq ${r.seq} (${r.api ?? 'mcp'}) names ${r.entities_version}, in force ${inForce}`);
  }
  return { decisions, stale };
}
