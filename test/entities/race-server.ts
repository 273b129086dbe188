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
export const AUTHZEN_QUESTION = { subject: { type: 'Agent', id: 'offboarding-agent-prod' }, action: { name: 'idp/disable_sign_in' }, resource: { type: 'Employee', id: '7721' } };
