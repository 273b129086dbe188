/**
 * The policy set and entities.json in force: recorded at start, reloaded when the policy dir's files
 * change (hot reload), entities.json edits applied as `entity` records.
 */
import { WritError, isWritError } from '../errors.js';
import { PolicyEngine } from '../policy/engine.js';
import { checkEntitiesFile, listSourceFiles, loadPolicyDir, policyVersionOf, readSourceFiles, type PolicyBundle } from '../policy/load.js';
import { PolicyFileAbsent, readPolicyFile, signatureOf } from '../policy/dir-files.js';
import type { EntityJson } from '../policy/entities.js';
import { join } from 'node:path';
import type { Table } from '../store/types.js';
import { ENTITIES_FILE_KEY, ENTITIES_VERSION_KEY, type EntityCache, entitiesFileChanges, subjectRevisionKey } from '../entities/entity-cache.js';
import { commitWithRevalidation } from './commit.js';
import * as metrics from '../metrics/metrics.js';
import { uidKey } from '../util/uid.js';
import { jcs } from '../util/canonical.js';
import * as log from '../log/log.js';
import type { PdpCore } from './core.js';

/** The meta row of a shared store naming the policy set last recorded as loaded. */
const POLICY_VERSION_KEY = 'policy_version';

/** Startup records and hot reload of the policy dir. */
export class PolicyReload {
  constructor(private readonly core: PdpCore) {}

  /** The policy files' content as last applied, to tell a real change from a touch. */
  private lastEntitiesFileText: string | undefined;
  /** The entities.json text first seen changed; applied only when the next poll reads it again. */
  private settlingEntitiesText: string | undefined;

  /** Ledgers the policy set in force when it differs from the last one recorded, and seeds entities. */
  async recordStartup(): Promise<void> {
    await this.core.entities.reload();
    const last = await this.core.store.listRecords({ kind: 'policy', from: 0, limit: 1000 });
    let lastVersion: string | undefined;
    let page = last;
    for (;;) {
      for (const r of page.records) if (r.result !== 'rejected') lastVersion = r.policy_version as string;
      if (page.next === null) break;
      page = await this.core.store.listRecords({ kind: 'policy', from: page.next, limit: 1000 });
    }
    if (lastVersion !== this.core.bundle.policyVersion) await this.recordPolicyLoad(this.core.bundle, 'loaded');
    await this.syncEntitiesFile();
  }

  private async recordPolicyLoad(bundle: PolicyBundle | undefined, result: 'loaded' | 'rejected', error?: WritError, version?: string): Promise<void> {
    const fields: Record<string, unknown> = { kind: 'policy', result };
    if (bundle) Object.assign(fields, { policy_version: bundle.policyVersion, files: bundle.files.map(([p]) => p), ids: bundle.ids });
    // The trusted entities this load read from the dir, named by count and content version: they reach
    // the store (and the ledger) as `entity` records with `source: "file"`, which replay rebuilds from.
    if (bundle?.entitiesFile) {
      fields.entities_file = { path: 'entities.json', entities: bundle.entitiesFile.entities, entities_version: bundle.entitiesFile.entitiesVersion };
    } else fields.policy_version = version;
    if (error) fields.error = { code: error.code, message: error.message.slice(0, 4000) };
    // Replicas loading the same set (at a joint start or from one mounted policy dir): the first
    // records it, the others find it in force in the store (read under the store's write lock).
    const shared = this.core.store.shared && result === 'loaded';
    await this.core.store.write(
      (tx) => {
        if (shared && tx.get<string>('meta', POLICY_VERSION_KEY) === fields.policy_version) return;
        if (shared) tx.put('meta', POLICY_VERSION_KEY, fields.policy_version);
        tx.append(fields as { kind: string });
      },
      { label: 'policy', reads: [['meta', POLICY_VERSION_KEY]] },
    );
  }

  /**
   * Hot reload (called on a timer): reload when the policy files' content changed; keep serving the old
   * set when the new one does not load. Entity file edits are applied as `entity` records.
   */
  private lastRejectedVersion: string | undefined;
  /** The policy files' version first seen changed; loaded only when the next poll sees it again. */
  private settlingVersion: string | undefined;
  /** The policy dir's file signature (dir-files.ts signatureOf) when the last poll left nothing settling. */
  private quietSignature: string | undefined;
  async reloadIfChanged(): Promise<void> {
    try {
      await this.pollDir();
    } finally {
      metrics.policyPolls.inc();
    }
  }

  private async pollDir(): Promise<void> {
    // Nothing read while no file's size, mtime or inode moved (a 50 MB entities.json is not read every
    // poll); a change still settling (read the same on two polls in a row) is polled until it settles.
    const dir = this.core.config.policy_dir;
    let signature: string | undefined;
    try {
      signature = signatureOf([...listSourceFiles(dir).map((rel) => join(dir, rel)), join(dir, 'entities.json')]);
    } catch {
      signature = undefined; // the dir cannot be walked: judged below, as before
    }
    if (signature !== undefined && signature === this.quietSignature) return;
    await this.reloadFromDir();
    this.quietSignature = this.settlingVersion === undefined && this.settlingEntitiesText === undefined ? signature : undefined;
  }

  private async reloadFromDir(): Promise<void> {
    const probe = probePolicyVersion(this.core.config.policy_dir, this.core.config.policy_file_max_bytes);
    // A file being written (truncated, half its text) must not be loaded as a policy set of its own:
    // a change is loaded once the files read the same on two polls in a row.
    const settled = probe === this.settlingVersion;
    this.settlingVersion = probe === this.core.bundle.policyVersion ? undefined : probe;
    if (settled && probe !== this.core.bundle.policyVersion && probe !== this.lastRejectedVersion) {
      try {
        const bundle = loadPolicyDir(this.core.config.policy_dir, { maxFileBytes: this.core.config.policy_file_max_bytes });
        const engine = new PolicyEngine(bundle, { memoSize: this.core.config.decision_memo_size });
        await this.recordPolicyLoad(bundle, 'loaded');
        this.core.inForce(bundle, engine);
        this.lastRejectedVersion = undefined;
        metrics.policyReloads.inc({ result: 'ok' });
        log.notice(`writ: policies reloaded (${bundle.policyVersion})`);
      } catch (e) {
        const err = isWritError(e) ? e : new WritError('POLICY_INVALID', String((e as Error)?.message ?? e));
        this.lastRejectedVersion = probe;
        metrics.policyReloads.inc({ result: 'failed' });
        log.warn(`writ: policy reload rejected, still serving ${this.core.bundle.policyVersion}: ${err.message}`);
        await this.recordPolicyLoad(undefined, 'rejected', err, probe).catch(() => undefined);
      }
    }
    await this.syncEntitiesFile({ settle: true });
  }

  /**
   * Applies `<policy_dir>/entities.json` to the store: on a store that never saw it, it seeds what the
   * store does not hold; afterwards each edit (while running, or while stopped) is applied as what
   * changed in the file (entity-cache.ts entitiesFileChanges), once per store whatever the replicas.
   */
  private async syncEntitiesFile(opts: { settle?: boolean } = {}): Promise<void> {
    let text: string;
    let unread: WritError | undefined;
    try {
      text = readPolicyFile(join(this.core.config.policy_dir, 'entities.json'), 'entities.json', this.core.config.policy_file_max_bytes);
    } catch (e) {
      if (e instanceof PolicyFileAbsent || !isWritError(e)) return;
      // Not a regular file, or over the size limit: refused below as a file that does not parse is,
      // once for as long as it stays so (the marker stands for its text).
      unread = e;
      text = `\0unread: ${e.message}`;
    }
    if (text === this.lastEntitiesFileText) {
      this.settlingEntitiesText = undefined; // an edit undone before it settled is forgotten
      return;
    }
    // While running, an edit is applied (or refused) once the file reads the same on two polls in a row,
    // as policy files are: a file being written is not judged by its first half.
    if (opts.settle) {
      const settled = text === this.settlingEntitiesText;
      this.settlingEntitiesText = text;
      if (!settled) return;
    }
    this.settlingEntitiesText = undefined;
    let parsed: EntityJson[];
    try {
      // The load-time check, against the schema in force: an entity the next restart would refuse
      // (an undeclared type, a wrong attribute) is refused now, not taken live and ledgered.
      if (unread !== undefined) throw unread;
      parsed = checkEntitiesFile(text, this.core.bundle.schema);
    } catch (e) {
      this.lastEntitiesFileText = text;
      metrics.policyReloads.inc({ result: 'failed' });
      log.warn(`writ: entities.json not applied: ${(e as Error).message.replace(/\s+/g, ' ')}`);
      // Ledgered as a broken policy file is (a `policy` record, `rejected`, naming the set still in force):
      // an auditor sees that an edit was refused, not only the operator reading stderr.
      const refusal = new WritError('POLICY_INVALID', `entities.json not applied, the entities in force are unchanged: ${(e as Error).message}`);
      await this.recordPolicyLoad(undefined, 'rejected', refusal, this.core.bundle.policyVersion).catch(() => undefined);
      return;
    }
    await this.core.entities.unheld();
    await this.applyEntitiesFile(parsed);
    this.lastEntitiesFileText = text;
  }

  private async applyEntitiesFile(parsed: EntityJson[]): Promise<void> {
    const fileText = jcs(parsed);
    let staged: ReturnType<EntityCache['stage']> | undefined;
    await commitWithRevalidation(
      this.core,
      async () => ({
        write: (tx) => {
          staged = undefined;
          const applied = tx.get<EntityJson[]>('meta', ENTITIES_FILE_KEY);
          // Already applied to this store: by another replica, or before a restart.
          if (applied !== undefined && jcs(applied) === fileText) return;
          // The diff reads the entities held here: they must be the store's (checked before this runs),
          // with no change of this process still landing (EntitiesUnsettled → wait for it, again).
          this.core.entities.checkSettled();
          const changes = entitiesFileChanges(applied, parsed, (key) => this.core.entities.get(key));
          tx.put('meta', ENTITIES_FILE_KEY, parsed);
          if (changes.length > 0) staged = this.core.entities.stage(tx, changes, 'file');
        },
        label: 'entity',
        // Every row the write may read, declared: a shared store fetches them in one round trip, where a
        // row it meets undeclared costs a round trip and a fresh run of the whole write (one per entity
        // of a large file: quadratic). The subject revisions of entities the edit drops are not known
        // yet; those few are fetched as met.
        reads: [
          ['meta', ENTITIES_FILE_KEY],
          ['meta', ENTITIES_VERSION_KEY],
          ...parsed.map((e): [Table, string] => ['meta', subjectRevisionKey(uidKey(e.uid))]),
        ],
        answer: () => staged?.commit(),
        failed: (e) => {
          staged?.abort();
          return e;
        },
      }),
      { holdEntities: false },
    );
  }
}

/** The policy version the dir would have now, computed cheaply from file contents (no Cedar parsing). */
function probePolicyVersion(dir: string, maxFileBytes: number): string {
  try {
    return policyVersionOf(readSourceFiles(dir, maxFileBytes));
  } catch {
    return 'unreadable';
  }
}
