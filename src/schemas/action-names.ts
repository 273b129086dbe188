/**
 * The command-line side of the request schema's rules for `action.server` and `action.tool`: `writ bind`
 * and `writ proxy` refuse a name no decision request may carry when they start, instead of having
 * every call refused later. The rules are read from schemas/decision-request.json, not restated.
 */
import { WritError } from '../errors.js';
import { loadSchemas } from './load.js';

interface NameRule {
  minLength: number;
  maxLength: number;
  pattern: RegExp | undefined;
  patternSource: string | undefined;
}

let nameRules: { server: NameRule; tool: NameRule } | undefined;

/** The rules of `action.server` and `action.tool` in schemas/decision-request.json, read once. */
function actionNameRules(): { server: NameRule; tool: NameRule } {
  if (nameRules) return nameRules;
  const request = loadSchemas().get('decision-request.json') as { properties: { action: { properties: Record<string, Record<string, unknown>> } } };
  const rule = (member: 'server' | 'tool'): NameRule => {
    const p = request.properties.action.properties[member]!;
    if (p.type !== 'string') throw new Error(`schemas/decision-request.json action.${member} is not a string`);
    const source = typeof p.pattern === 'string' ? p.pattern : undefined;
    return {
      minLength: typeof p.minLength === 'number' ? p.minLength : 0,
      maxLength: typeof p.maxLength === 'number' ? p.maxLength : Infinity,
      // As src/schemas/validate.ts compiles them: no `u` flag (ajv unicodeRegExp: false).
      pattern: source === undefined ? undefined : new RegExp(source),
      patternSource: source,
    };
  };
  nameRules = { server: rule('server'), tool: rule('tool') };
  return nameRules;
}

/** How the command-line tools name the two values. */
const CLI_LABELS = { server: '--server', tool: '--tool' };

/**
 * Why --server or --tool could not be a decision request's `action.server` / `action.tool`
 * (POST /v1/decisions answers 400 INVALID_REQUEST for them), or undefined; without a tool, only the
 * server is checked (`writ proxy --server`). Lengths count UTF-16
 * code units, as the request validator does (src/schemas/validate.ts, ajv `unicode: false`).
 */
export function actionNameRefusal(server: string, tool?: string, labels: { server: string; tool: string } = CLI_LABELS): WritError | undefined {
  const rules = actionNameRules();
  const named = [['server', server, rules.server], ...(tool === undefined ? [] : [['tool', tool, rules.tool]])] as const;
  for (const [member, value, rule] of named as ReadonlyArray<readonly ['server' | 'tool', string, NameRule]>) {
    const flag = labels[member];
    const where = `(action.${member} of a decision request)`;
    let why: string | undefined;
    if (value.length < rule.minLength) why = rule.minLength === 1 ? 'must not be empty' : `must be at least ${rule.minLength} characters`;
    else if (value.length > rule.maxLength) why = `must be at most ${rule.maxLength} characters`;
    else if (rule.pattern && !rule.pattern.test(value)) why = rule.patternSource === '^[^/]+$' ? 'must not contain "/"' : `must match ${rule.patternSource}`;
    if (why !== undefined) return new WritError('INVALID_REQUEST', `${flag} ${why} ${where}`, { path: '' });
  }
  return undefined;
}
