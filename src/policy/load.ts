/**
 * Loading a policy directory into an immutable PolicyBundle: every `*.cedar` file (recursive,
 * excluding the top-level `tests/`), an optional Cedar schema and `entities.json`. Everything that
 * can be wrong with a directory is found here, once, so the engine never meets a malformed set.
 */
import { readdirSync, existsSync, realpathSync, statSync } from 'node:fs';
import { join } from 'node:path';
import * as cedar from '@cedar-policy/cedar-wasm/nodejs';
import { WritError } from '../errors.js';
import { digestOf } from '../util/canonical.js';
import { parseUidKey, uidKey } from '../util/uid.js';
import { type EntityJson, entitiesVersionOf, parseEntitiesJson } from './entities.js';
import { type PolicyRelevance, relevanceOf } from './relevance.js';
import { DEFAULT_POLICY_FILE_MAX_BYTES, PolicyFileAbsent, readPolicyFile } from './dir-files.js';

export { entitiesVersionOf } from './entities.js';
export type { EntityJson, EntitySource } from './entities.js';

/** What the engine needs to know about one policy beyond its text. */
export interface PolicyInfo {
  id: string;
  file: string;
  /** 0-based position within its file. */
  index: number;
  effect: 'permit' | 'forbid';
  /** The approver group uid key (`Role::"hr"`) from `@requires_approval`, forbids only. */
  requiresApproval?: string;
  /** Which actions it can apply to and which context attributes it reads (see relevance.ts). */
  relevance: PolicyRelevance;
}

export interface PolicyBundle {
  dir: string;
  policyVersion: string;
  /** Policy ids in load order (file path order, then position in file). */
  ids: string[];
  /** `[relative path, text]` of every .cedar and schema file, sorted by path. */
  files: Array<[string, string]>;
  /** The schema file's text (Cedar syntax, or JSON for `*.cedarschema.json`). */
  schemaText?: string;
  /** `<dir>/entities.json`, [] if absent. */
  seedEntities: EntityJson[];
  /**
   * Present when `<dir>/entities.json` was read: how many entities it holds and the `entities_version`
   * a store holding exactly them would have. The `policy` record of this load names the file by them.
   */
  entitiesFile?: { entities: number; entitiesVersion: string };
  /** Policy text by id, as handed to Cedar (`staticPolicies`). */
  policies: Record<string, string>;
  info: Map<string, PolicyInfo>;
  /** The schema in the form Cedar takes (text, or parsed JSON). */
  schema?: cedar.Schema;
}

/** docs/protocol.md §2: `sha256:` + hex SHA-256 of JCS of `[[relative path, file text], …]` sorted by path. */
export function policyVersionOf(files: Array<[relPath: string, text: string]>): string {
  const sorted = [...files].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return digestOf(
    '',
    sorted.map(([path, text]) => [path, text]),
  );
}

const SCHEMA_SUFFIXES = ['.cedarschema.json', '.cedarschema'];

function isSchemaFile(name: string): boolean {
  return SCHEMA_SUFFIXES.some((s) => name.endsWith(s));
}

/**
 * Relative POSIX paths of policy and schema files under dir, sorted by path (UTF-16 code units, as
 * policy_version sorts them, so load order — and the order of reasons — is path order). Symbolic links
 * are followed (a Kubernetes ConfigMap mounts each file as a link into a hidden, versioned directory);
 * names starting with `.` are skipped (that hidden directory, editor lock and swap files), and so is
 * the top-level `tests/` (the `writ policy test` cases and their fixtures). A directory reached twice
 * through links is read once.
 */
export function listSourceFiles(dir: string): string[] {
  const out: string[] = [];
  const visited = new Set<string>();
  const walk = (rel: string): void => {
    const abs = rel === '' ? dir : join(dir, rel);
    const real = realpathSync(abs);
    if (visited.has(real)) return;
    visited.add(real);
    // In name order, so that when links reach one directory twice the same path always wins.
    for (const name of readdirSync(abs).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))) {
      if (name.startsWith('.')) continue;
      const relPath = rel === '' ? name : `${rel}/${name}`;
      let stats;
      try {
        stats = statSync(join(dir, relPath)); // follows links
      } catch {
        continue; // a dangling link
      }
      if (stats.isDirectory()) {
        if (rel === '' && name === 'tests') continue;
        walk(relPath);
      } else if (name.endsWith('.cedar') || isSchemaFile(name)) {
        // Not only regular files: a FIFO or a device by a policy file's name is listed, so that reading
        // it (dir-files.ts) refuses the whole set rather than silently loading it without that file.
        out.push(relPath);
      }
    }
  };
  walk('');
  return out.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

/**
 * `[relative path, text]` of every policy and schema file (listSourceFiles), each read by the policy-dir
 * rules (dir-files.ts): regular files within `maxFileBytes`, else POLICY_INVALID naming every one refused.
 */
export function readSourceFiles(dir: string, maxFileBytes: number = DEFAULT_POLICY_FILE_MAX_BYTES): Array<[string, string]> {
  const problems: string[] = [];
  const files: Array<[string, string]> = [];
  for (const rel of listSourceFiles(dir)) {
    try {
      files.push([rel, readPolicyFile(join(dir, rel), rel, maxFileBytes)]);
    } catch (e) {
      if (!(e instanceof WritError) && !(e instanceof PolicyFileAbsent)) throw e;
      problems.push(e.message);
    }
  }
  if (problems.length > 0) invalid(problems);
  return files;
}

/** `file:line:col` for a character offset, so a parse error points at the source. */
function locate(file: string, text: string, offset: number | undefined): string {
  if (offset === undefined) return file;
  const before = text.slice(0, offset).split('\n');
  return `${file}:${before.length}:${before[before.length - 1]!.length + 1}`;
}

/** Cedar's errors about one file, each as `file:line:col: message (help)` (as `writ policy validate` prints them). */
export function describeCedarErrors(errors: cedar.DetailedError[], file: string, text?: string): string[] {
  return describe(errors, file, text);
}

function describe(errors: cedar.DetailedError[], file: string, text?: string): string[] {
  return errors.map((e) => {
    const where = text === undefined ? file : locate(file, text, e.sourceLocations?.[0]?.start);
    return `${where}: ${e.message}${e.help ? ` (${e.help})` : ''}`;
  });
}

function invalid(problems: string[]): never {
  const more = problems.length > 1 ? ` (+${problems.length - 1} more)` : '';
  throw new WritError('POLICY_INVALID', `${problems[0]}${more}`, { details: problems });
}

/**
 * `policySetTextToParts` returns policies sorted by their auto-assigned ids `policy0`, `policy1`, …
 * as strings (so `policy10` precedes `policy2`). This maps that order back to source positions.
 */
function sourceIndexOrder(count: number): number[] {
  return Array.from({ length: count }, (_, i) => `policy${i}`)
    .sort()
    .map((id) => Number(id.slice('policy'.length)));
}

interface ParsedPolicy extends PolicyInfo {
  text: string;
}

/** The annotations writ reads besides `@id`. */
const WRIT_ANNOTATIONS = ['requires_approval'];

/** Edit distance (insertions, deletions, substitutions) between two short names. */
function editDistance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) next[j] = Math.min(row[j]! + 1, next[j - 1]! + 1, row[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    row = next;
  }
  return row[b.length]!;
}

/**
 * The writ annotation an unknown one is a near miss of (`@requires_aproval`, `@requiresApproval`), if
 * any: Cedar accepts any annotation, so a misspelt `@requires_approval` would silently leave its forbid
 * a plain deny, where the author meant `approval_required`.
 */
function misspeltAnnotation(name: string): string | undefined {
  const squash = (n: string) => n.toLowerCase().replace(/[-_]/g, '');
  return WRIT_ANNOTATIONS.find((known) => name !== known && editDistance(squash(name), squash(known)) <= 2);
}

/**
 * Each policy's character offset in its file, by the position in `parts` (which Cedar lists in its own
 * id order, `order` maps back to source order): Cedar hands back every policy as the exact slice of the
 * source it was parsed from, so searching forward in source order finds each one, duplicates included.
 * A slice not found (never expected) has no offset, and its problems then name the file alone.
 */
function policyOffsets(text: string, parts: string[], order: number[]): Array<number | undefined> {
  const bySource = parts.map((_, k) => k).sort((a, b) => order[a]! - order[b]!);
  const starts = new Array<number | undefined>(parts.length);
  let from = 0;
  for (const k of bySource) {
    const at = text.indexOf(parts[k]!, from);
    if (at < 0) continue;
    starts[k] = at;
    from = at + parts[k]!.length;
  }
  return starts;
}

/**
 * The offset of the annotation `@name` in a policy's text that starts at `start` (else the policy's own
 * start): the first `@name` outside strings and comments, so a comment or an `@id` value that mentions
 * the name is not taken for it.
 */
function annotationOffset(policyText: string, name: string, start: number | undefined): number | undefined {
  if (start === undefined) return undefined;
  const isNameChar = (c: string | undefined) => c !== undefined && /[A-Za-z0-9_]/.test(c);
  for (let i = 0; i < policyText.length; i++) {
    const c = policyText[i];
    if (c === '"') {
      for (i++; i < policyText.length && policyText[i] !== '"'; i++) if (policyText[i] === '\\') i++;
    } else if (c === '/' && policyText[i + 1] === '/') {
      while (i < policyText.length && policyText[i] !== '\n') i++;
    } else if (c === '@') {
      let j = i + 1;
      while (/\s/.test(policyText[j] ?? '')) j++;
      if (policyText.startsWith(name, j) && !isNameChar(policyText[j + name.length])) return start + i;
    }
  }
  return start;
}

function parsePolicyFile(file: string, text: string, problems: string[]): ParsedPolicy[] {
  const parts = cedar.policySetTextToParts(text);
  if (parts.type === 'failure') {
    problems.push(...describe(parts.errors, file, text));
    return [];
  }
  if (parts.policy_templates.length > 0) {
    problems.push(`${file}: templates (policies with ?principal/?resource slots) are not supported`);
    return [];
  }
  const order = sourceIndexOrder(parts.policies.length);
  const starts = policyOffsets(text, parts.policies, order);
  const parsed: ParsedPolicy[] = [];
  parts.policies.forEach((policyText, k) => {
    const index = order[k]!;
    // Where one of this policy's annotations is written, as `file:line:col`, so writ's own annotation
    // checks point at the source as Cedar's errors do.
    const at = (name: string) => locate(file, text, annotationOffset(policyText, name, starts[k]));
    const json = cedar.policyToJson(policyText);
    if (json.type === 'failure') {
      problems.push(...describe(json.errors, `${file}#${index}`));
      return;
    }
    const annotations = json.json.annotations ?? {};
    const annotatedId = annotations.id;
    if (annotatedId === null) problems.push(`${file}#${index}: @id needs a value`);
    const id = typeof annotatedId === 'string' ? annotatedId : `${file}#${index}`;
    const policy: ParsedPolicy = { id, file, index, effect: json.json.effect, text: policyText, relevance: relevanceOf(json.json) };
    for (const name of Object.keys(annotations)) {
      const meant = misspeltAnnotation(name);
      if (meant) problems.push(`${at(name)}: ${id}: unknown annotation @${name}: did you mean @${meant}?`);
    }
    if ('requires_approval' in annotations) {
      const group = annotations.requires_approval;
      const uid = typeof group === 'string' ? parseUidKey(group) : undefined;
      const where = at('requires_approval');
      if (json.json.effect !== 'forbid') problems.push(`${where}: ${id}: @requires_approval is only meaningful on a forbid`);
      else if (!uid) problems.push(`${where}: ${id}: @requires_approval needs an entity uid like "Role::\\"hr\\"", got ${JSON.stringify(group)}`);
      else policy.requiresApproval = uidKey(uid);
    }
    parsed.push(policy);
  });
  return parsed.sort((a, b) => a.index - b.index);
}

function readSchema(file: string, text: string, problems: string[]): cedar.Schema | undefined {
  let schema: cedar.Schema = text;
  if (file.endsWith('.json')) {
    try {
      schema = JSON.parse(text) as cedar.Schema;
    } catch (e) {
      problems.push(`${file}: not JSON: ${(e as Error).message}`);
      return undefined;
    }
  }
  const check = cedar.checkParseSchema(schema);
  if (check.type === 'failure') {
    problems.push(...describe(check.errors, file, typeof schema === 'string' ? text : undefined));
    return undefined;
  }
  return schema;
}

/**
 * Reads every *.cedar (recursive, excluding tests/), an optional Cedar schema (`*.cedarschema`, or
 * `*.cedarschema.json`), entities.json. Parse errors, duplicate @id, strict schema validation
 * failures, bad @requires_approval values, bad entities.json → WritError('POLICY_INVALID', msg,
 * {details: [...]}). With `entities: false` entities.json is neither read nor checked.
 */
export function loadPolicyDir(dir: string, opts: { entities?: boolean; maxFileBytes?: number } = {}): PolicyBundle {
  if (!existsSync(dir) || !statSync(dir).isDirectory()) invalid([`${dir}: not a directory`]);
  const maxFileBytes = opts.maxFileBytes ?? DEFAULT_POLICY_FILE_MAX_BYTES;
  const files = readSourceFiles(dir, maxFileBytes);
  const problems: string[] = [];

  const schemaFiles = files.filter(([rel]) => isSchemaFile(rel));
  if (schemaFiles.length > 1) problems.push(`more than one schema file: ${schemaFiles.map(([rel]) => rel).join(', ')}`);
  const schemaFile = schemaFiles[0];
  const schema = schemaFile ? readSchema(schemaFile[0], schemaFile[1], problems) : undefined;

  const parsed = files.filter(([rel]) => rel.endsWith('.cedar')).flatMap(([rel, text]) => parsePolicyFile(rel, text, problems));
  const info = new Map<string, PolicyInfo>();
  const policies: Record<string, string> = {};
  for (const p of parsed) {
    const previous = info.get(p.id);
    if (previous) {
      problems.push(`duplicate policy id "${p.id}" (${previous.file}#${previous.index} and ${p.file}#${p.index})`);
      continue;
    }
    const { text, ...policyInfo } = p;
    info.set(p.id, policyInfo);
    policies[p.id] = text;
  }

  if (schema !== undefined && problems.length === 0) {
    const result = cedar.validate({ schema, policies: { staticPolicies: policies }, validationSettings: { mode: 'strict' } });
    if (result.type === 'failure') problems.push(...describe(result.errors, schemaFile![0]));
    else for (const v of result.validationErrors) problems.push(`${v.policyId}: ${v.error.message}`);
  }

  let seedEntities: EntityJson[] = [];
  let entitiesFileRead = false;
  const entitiesPath = join(dir, 'entities.json');
  // `entities: false` (policy replay): the caller brings its own entities, so the file is not read.
  if (opts.entities !== false) {
    try {
      seedEntities = checkEntitiesFile(readPolicyFile(entitiesPath, 'entities.json', maxFileBytes), schema);
      entitiesFileRead = true;
    } catch (e) {
      // No entities.json: nothing is seeded from the dir.
      if (!(e instanceof PolicyFileAbsent)) {
        if (!(e instanceof WritError)) throw e;
        problems.push(...((e.details as string[] | undefined) ?? [e.message]));
      }
    }
  }

  if (problems.length > 0) invalid(problems);
  const bundle: PolicyBundle = {
    dir,
    policyVersion: policyVersionOf(files),
    ids: [...info.keys()],
    files,
    seedEntities,
    policies,
    info,
  };
  if (schemaFile) bundle.schemaText = schemaFile[1];
  if (schema !== undefined) bundle.schema = schema;
  if (entitiesFileRead) bundle.entitiesFile = { entities: seedEntities.length, entitiesVersion: entitiesVersionOf(seedEntities) };
  return bundle;
}

/**
 * The text of an `entities.json`, parsed and checked as a whole against the set's schema (or, without
 * one, for what Cedar can represent) → its entities, or POLICY_INVALID with every problem in `details`.
 * The one check for the file: at load (loadPolicyDir) and when an edit is applied while running
 * (PolicyReload.syncEntitiesFile, src/pdp/policy-reload.ts), so an entity a restart would refuse is never taken live.
 */
export function checkEntitiesFile(text: string, schema: cedar.Schema | undefined): EntityJson[] {
  const entities = parseEntitiesJson(text, 'entities.json');
  const check = cedar.checkParseEntities({ entities: entities as cedar.EntityJson[], schema: schema ?? null });
  if (check.type === 'failure') invalid(describe(check.errors, 'entities.json'));
  return entities;
}

/**
 * Validates one entity (uid, attrs, parents) against the bundle's schema if there is one → WritError
 * INVALID_REQUEST with a message. Without a schema it still checks that Cedar can represent the
 * entity (no nulls, no floats), since such an entity would make every request that touches it fail.
 * Used by the admin PUT /v1/entities route.
 */
export function validateEntity(bundle: PolicyBundle, entity: EntityJson): void {
  const check = cedar.checkParseEntities({ entities: [entity as cedar.EntityJson], schema: bundle.schema ?? null });
  if (check.type === 'failure') {
    throw new WritError('INVALID_REQUEST', `entity ${uidKey(entity.uid)}: ${check.errors.map((e) => e.message).join('; ')}`);
  }
}
