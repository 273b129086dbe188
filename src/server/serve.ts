/**
 * `writ serve`: wires config, store, keys, checkpoints, policies and the HTTP app into one running
 * sidecar, with hot reload and graceful shutdown (SIGTERM: stop accepting, finish in-flight requests,
 * write a checkpoint covering everything acknowledged, exit 0).
 */
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { readTlsMaterial } from '../http/tls.js';
import { appServer } from '../http/listener.js';
import { fairnessOf } from '../http/fairness.js';
import { generateDevTokens, parseListen, type WritConfig } from '../config/config.js';
import { probePort } from '../front/probe-port.js';
import { countUnroutedAnswers } from '../http/answer-metrics.js';
import { error as logError, info as logInfo, setLogFormat, warn as logWarn } from '../log/log.js';
import { Authenticator, TokenTable } from '../http/auth.js';
import { JwtVerifier } from '../identity/verify.js';
import { closeGracefully } from '../http/graceful-close.js';
import { buildApp } from '../http/app.js';
import { storeReadiness } from '../http/routes/health.js';
import { AuthzenService } from '../authzen/handler.js';
import { openStore } from '../store/open.js';
import { openStoreWhenReachable } from './waiting.js';
import { ensureKeyRecord, loadDeploymentKey, refuseLostLedger } from '../checkpoints/keys.js';
import { dataFileOf } from '../store/layout.js';
import { checkAgainstWitness } from '../checkpoints/witness.js';
import { startCheckpointer } from '../checkpoints/checkpointer.js';
import { CheckpointNotes, defaultOrigin } from '../checkpoints/notes.js';
import { startWitnessSubmitter, type WitnessSubmitter } from '../checkpoints/witnesses.js';
import { loadPolicyDir } from '../policy/load.js';
import { pdpServices, type PdpServices } from '../pdp/services.js';
import type { PdpCore } from '../pdp/core.js';
import { faultHooksFromEnv } from './faults.js';
import { Fronts } from '../front/fronts.js';
import { frontsAreThreads, frontThreadsSupported } from '../front/node-version.js';
import * as metrics from '../metrics/metrics.js';

/** How long a stop waits for the witnesses to cosign the final checkpoint. */
const WITNESS_GRACE_MS = 2000;

export interface RunningSidecar {
  url: string;
  /** The decision core and its services. */
  pdp: PdpServices;
  tokensFile?: string;
  devTokens?: Record<string, string>;
  /** Graceful stop: no new requests, in-flight ones finish, final checkpoint, store closed. */
  close(): Promise<void>;
}

export async function startSidecar(
  config: WritConfig,
  o: { devTokens: boolean; log?: (line: string) => void; stopRequested?: () => boolean },
): Promise<RunningSidecar> {
  const log = o.log ?? logInfo;
  countUnroutedAnswers();
  if (config.log_format) setLogFormat(config.log_format); // as loadConfig does, for a config built in code
  // Policies first: a broken policy dir must not leave a locked, half-started store behind.
  const bundle = loadPolicyDir(config.policy_dir, { maxFileBytes: config.policy_file_max_bytes });
  // The TLS files too: a certificate that cannot serve must stop the start before anything is opened.
  const tls = readTlsMaterial(config.tls_cert_file, config.tls_key_file, { caFile: config.tls_client_ca_file, clients: config.tls_clients });
  metrics.policyReloads.inc({ result: 'ok' }); // the start's load counts as one (a failed one ends the start)
  const faults = faultHooksFromEnv();
  if (!config.database_url) refuseLostLedger(config.data_dir, dataFileOf(config.data_dir));
  const open = () =>
    openStore({
      dataDir: config.data_dir,
      databaseUrl: config.database_url,
      durability: config.durability,
      compression: config.store_compression,
      writeTimeoutMs: 10_000,
      ...(faults ? { faults } : {}),
    });
  // Replicas wait for an unreachable database, answering 503 on their address meanwhile (waiting.ts);
  // the embedded LMDB store either opens or the start fails.
  let store: Awaited<ReturnType<typeof open>>;
  /** Frees the listen address a replica held while it waited for its database (waiting.ts). */
  let stopWaiting = async (): Promise<void> => undefined;
  /** The waiting listener shares the port with the front threads that will take it over (SO_REUSEPORT). */
  const sharePort = config.http_threads > 0 && frontThreadsSupported();
  let waited = false;
  if (config.database_url) {
    const opened = await openStoreWhenReachable(open, {
      listen: config.listen,
      log,
      stopRequested: o.stopRequested ?? (() => false),
      tokens: config.tokens,
      maxBodyBytes: config.max_body_bytes,
      fairness: fairnessOf(config),
      publicTiles: config.public_tiles,
      sharePort,
      ...(tls ? { tls } : {}),
      ...(config.public_url ? { publicUrl: config.public_url } : {}),
    });
    store = opened.store;
    stopWaiting = opened.stopWaiting;
    waited = opened.waited;
    config = { ...config, listen: opened.listen };
  } else {
    // A listen address already taken (another writ, another server) is found before the data dir and its
    // store are created: a start that cannot serve leaves nothing behind. (Only a check: the address is
    // bound for real once the store is open.)
    const { host, port } = parseListen(config.listen);
    if (port !== 0) await probePort(host, port);
    store = await open();
  }
  let checkpointer: ReturnType<typeof startCheckpointer> | undefined;
  let witnessSubmitter: WitnessSubmitter | undefined;
  let server: Server | undefined;
  let fronts: Fronts | undefined;
  let created: PdpServices | undefined;
  try {
    // Before anything is written: a store behind (or beside) the checkpoints its witness holds is refused.
    if (config.witness_dir) await checkAgainstWitness(store, config.witness_dir);
    const key = loadDeploymentKey({
      dataDir: config.data_dir,
      keyFile: config.signing_key_file,
      ledgerHasKeys: (await store.keys()).length > 0,
      ledgerWhere: `the ledger in ${store.location}`,
    });
    await ensureKeyRecord(store, key);
    const notes = new CheckpointNotes(store, key, config.log_origin ?? (await defaultOrigin(store, key)));
    // With HTTP front threads (src/front/) the fronts own the public port and evaluate, each with its
    // share of the evaluator threads; this thread is the ledger writer and evaluates in-process only
    // what it decides again itself.
    const frontCount = config.http_threads;
    const pdp = pdpServices(frontCount > 0 ? { ...config, evaluator_threads: 0 } : config, store, bundle);
    created = pdp;
    await pdp.policy.recordStartup();
    const submitter = config.witnesses.length > 0 ? startWitnessSubmitter(store, notes, config.witnesses) : undefined;
    witnessSubmitter = submitter;
    checkpointer = startCheckpointer(store, {
      key,
      everyRecords: config.checkpoint.every_records,
      everyMs: config.checkpoint.every_ms,
      witnessDir: config.witness_dir,
      ...(submitter ? { onCheckpoint: (record) => submitter.submit(record) } : {}),
    });
    // A checkpoint at start, so an auditor always has a signed head to hold.
    await checkpointer.checkpointNow();
    // The witnesses get the latest checkpoint even when the start wrote none (nothing new).
    if (submitter) {
      const latest = await store.latestCheckpoint();
      if (latest) submitter.submit(latest);
    }

    let tokenSpecs = config.tokens;
    let devTokens: Record<string, string> | undefined;
    let tokensFile: string | undefined;
    if (o.devTokens) {
      const generated = generateDevTokens(config.data_dir);
      tokenSpecs = generated.specs;
      devTokens = generated.byRole;
      tokensFile = generated.file;
    }
    let shuttingDown = false;
    let publicUrl: string | undefined;
    const jwt =
      config.jwt_issuers.length > 0
        ? new JwtVerifier(config.jwt_issuers, {
            onFetch: (issuer, ok, problem) => {
              metrics.jwksFetches.inc({ issuer, result: ok ? 'ok' : 'failed' });
              // At most one line per 30 s per issuer (the fetch budget): an unreachable IdP is said, not flooded.
              if (!ok) logWarn(`writ: the keys of JWT issuer ${issuer} could not be fetched (${problem}); keys already held stay in use`);
            },
          })
        : undefined;
    const auth = new Authenticator(new TokenTable(tokenSpecs), jwt);
    const cp = checkpointer;
    const backend = {
      pdp,
      authzen: new AuthzenService(pdp.core),
      readiness: storeReadiness({ store, policyVersion: () => pdp.core.engine.policyVersion, ready: async () => !shuttingDown && (await store.writable()) }),
      notes,
    };

    const { host, port } = parseListen(config.listen);
    let address: AddressInfo | undefined;
    if (frontCount === 0) {
      const app = buildApp({
        backend: { ...backend, ready: async () => (await backend.readiness.probe()).ready },
        auth,
        maxBodyBytes: config.max_body_bytes,
        fairness: fairnessOf(config),
        publicOrigin: () => publicUrl,
        ...(config.public_url ? { publicUrl: config.public_url } : {}),
        publicTiles: config.public_tiles,
      });
      // Checkpoint cadence is checked after every /v1 request. (A Hono middleware added after the
      // routes would never run: a route that answers ends the chain.)
      const appFetch = async (request: Request, env?: unknown) => {
        const res = await app.fetch(request, env);
        if (request.url.includes('/v1/')) cp.maybeCheckpoint();
        return res;
      };
      await stopWaiting();
      const listener = appServer(appFetch, { tls, hostname: host });
      server = await new Promise<Server>((resolve, reject) => {
        listener.once('error', reject);
        listener.listen(port, host, () => resolve(listener));
      });
      address = server.address() as AddressInfo;
    } else {
      // The fronts serve the app themselves, over calls by message to this thread's services
      // (src/front/backend-calls.ts): this thread has no HTTP listener.
      fronts = await Fronts.start({
        // The waiting listener keeps the port until the fronts are loaded and bound beside it (or about to bind).
        ...(waited ? { heldPort: { shared: sharePort, release: stopWaiting } } : {}),
        count: frontCount,
        host,
        port,
        tokens: tokenSpecs,
        jwtIssuers: config.jwt_issuers,
        maxBodyBytes: config.max_body_bytes,
        core: pdp.core,
        decisions: pdp.decisions,
        ...(tls ? { tls } : {}),
        evaluatorThreads: config.evaluator_threads,
        afterAnswer: () => cp.maybeCheckpoint(),
        ...(jwt?.cache ? { keySet: jwt.cache.keySetFor.bind(jwt.cache) } : {}),
        backend,
        app: {
          ...(config.public_url ? { publicUrl: config.public_url } : {}),
          publicTiles: config.public_tiles,
          notesOrigin: notes.origin,
        },
      });
    }
    const publicPort = fronts ? fronts.port : address!.port;
    const publicHost = fronts ? host : address!.address;
    const url = `${tls ? 'https' : 'http'}://${publicHost.includes(':') ? `[${publicHost}]` : publicHost}:${publicPort}`;
    publicUrl = url;

    // One reload at a time: a reload that outlasts the poll interval (a slow fsync, a loaded machine)
    // must not overlap the next, which would see the same new files and ledger the same load twice.
    let reloading = false;
    const reloadTimer = setInterval(() => {
      if (reloading) return;
      reloading = true;
      pdp.policy
        .reloadIfChanged()
        .catch((e) => logError(`writ: reload failed: ${(e as Error).message}`))
        .finally(() => {
          reloading = false;
        });
    }, config.policy_poll_ms);
    reloadTimer.unref();
    await pdp.core.countExecutionStates();
    const gaugeTimer = setInterval(() => updateExecutionGauge(pdp.core), 5000);
    gaugeTimer.unref();
    updateExecutionGauge(pdp.core);

    if (fronts) {
      const kind = frontsAreThreads(frontCount) ? (frontCount === 1 ? 'thread' : 'threads') : 'processes';
      log(`writ serve: ${frontCount} HTTP front ${kind} (http_threads), the main thread writes the ledger`);
    }
    // The line that says the sidecar is ready (scripts and tests wait for it): everything is up by now.
    log(`writ serve: listening on ${url}`);
    log(`writ serve: policies ${config.policy_dir} (${bundle.policyVersion}, ${bundle.ids.length} ${bundle.ids.length === 1 ? 'policy' : 'policies'})`);
    log(`writ serve: ${store.where} (ledger ${await store.size()} records, head ${await store.head()})`);
    if (devTokens && tokensFile) {
      log(`writ serve: dev tokens (fresh on every start) written to ${tokensFile}:`);
      for (const [role, token] of Object.entries(devTokens)) log(`  ${role.padEnd(10)} ${token}`);
    }
    for (const i of config.jwt_issuers)
      log(`writ serve: JWT callers of ${i.issuer} (audience ${i.audience}; scopes ${Object.keys(i.roles).join(', ') || 'none'})`);
    if (config.tls_client_ca_file) log(`writ serve: client certificates of ${config.tls_client_ca_file} (${config.tls_clients.length} tls_clients)`);
    if (!o.devTokens && config.tokens.length === 0 && config.jwt_issuers.length === 0 && config.tls_clients.length === 0)
      logWarn('writ serve: the config lists no tokens ("tokens": []): every API call is refused (401) until it does');

    const httpServer = server;
    let closing: Promise<void> | undefined;
    const close = () =>
      (closing ??= (async () => {
        shuttingDown = true; // /readyz answers 503 from now on
        if (config.shutdown_delay_ms > 0) {
          // Still serving, so requests a load balancer sends before it sees /readyz fail are answered.
          log(`writ serve: draining: /readyz answers 503; serving ${config.shutdown_delay_ms} ms more before closing the port (shutdown_delay_ms)`);
          await new Promise((resolve) => setTimeout(resolve, config.shutdown_delay_ms));
        }
        clearInterval(reloadTimer);
        clearInterval(gaugeTimer);
        // Fronts first: their in-flight decisions are answered by this thread's writes.
        await fronts?.close();
        if (httpServer) await closeGracefully(httpServer);
        await cp.stop();
        // The final checkpoint goes to the witnesses too, if they answer soon; a slow one is not waited for.
        if (witnessSubmitter) {
          let timer: NodeJS.Timeout | undefined;
          await Promise.race([witnessSubmitter.idle(), new Promise((resolve) => (timer = setTimeout(resolve, WITNESS_GRACE_MS)))]);
          clearTimeout(timer);
          witnessSubmitter.stop();
        }
        await pdp.core.close();
        await store.close();
      })());
    const running: RunningSidecar = { url, pdp, close };
    if (tokensFile) running.tokensFile = tokensFile;
    if (devTokens) running.devTokens = devTokens;
    return running;
  } catch (e) {
    await stopWaiting();
    await fronts?.close().catch(() => undefined);
    server?.close();
    await checkpointer?.stop().catch(() => undefined);
    witnessSubmitter?.stop();
    await created?.core.close().catch(() => undefined);
    await store.close().catch(() => undefined);
    throw e;
  }
}

/** Executions by state (kept current by the sidecar, O(1) here) and the ledger size, for /metrics. */
function updateExecutionGauge(core: PdpCore): void {
  for (const [state, n] of Object.entries(core.executionStates)) metrics.executionsByState.set({ state }, n);
  metrics.ledgerRecords.set(core.store.knownSize());
}
