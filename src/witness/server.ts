/**
 * `writ witness serve` (docs/protocol.md §16): a C2SP tlog-witness v1.0.0 over HTTP, for any number of
 * logs (`--log VKEY`, the origin being the vkey's name). `POST /add-checkpoint` answers 200 with one
 * cosignature/v1 line, or 400/403/404/409/422 as add-checkpoint.ts decides; the new state is fsync'd
 * before the cosignature is made. Anything else is 404 (another path) or 405 (another method).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { KeyObject } from 'node:crypto';
import { cosignText, type VerifierKey } from '../transparency/note.js';
import { decideAddCheckpoint } from './add-checkpoint.js';
import type { WitnessState } from './state.js';

/** A request body larger than this is refused (a checkpoint, 63 proof lines and 100 signatures fit easily). */
export const MAX_BODY_BYTES = 256 * 1024;
const utf8 = new TextDecoder('utf-8', { fatal: true });

export interface WitnessOptions {
  name: string;
  privateKey: KeyObject;
  logs: ReadonlyMap<string, VerifierKey[]>;
  state: WitnessState;
  /** POSIX seconds (a test may fix it). */
  now?: () => number;
}

function answer(res: ServerResponse, status: number, body: string, type = 'text/plain; charset=utf-8'): void {
  res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

/** Handles one add-checkpoint body: status, content type and body of the answer. */
export function addCheckpoint(o: WitnessOptions, body: string): { status: number; type: string; body: string } {
  const outcome = decideAddCheckpoint(body, o.logs, (origin) => o.state.get(origin));
  if (outcome.status === 409) return { status: 409, type: 'text/x.tlog.size', body: `${outcome.size}\n` };
  if (outcome.status !== 200) return { status: outcome.status, type: 'text/plain; charset=utf-8', body: `${outcome.reason}\n` };
  // Durable first: a cosignature handed out is never forgotten by a restart.
  o.state.put(outcome.checkpoint.origin, outcome.state);
  const now = o.now?.() ?? Math.floor(Date.now() / 1000);
  return { status: 200, type: 'text/plain; charset=utf-8', body: cosignText(outcome.note.text, o.name, o.privateKey, now) };
}

function readBody(req: IncomingMessage): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY_BYTES) {
        resolve(undefined);
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

export function createWitnessServer(o: WitnessOptions): Server {
  return createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/add-checkpoint') return answer(res, 404, 'not found\n');
    if (req.method !== 'POST') {
      res.setHeader('allow', 'POST');
      return answer(res, 405, 'POST only\n');
    }
    readBody(req).then(
      (body) => {
        if (body === undefined) return answer(res, 413, `the body exceeds ${MAX_BODY_BYTES} bytes\n`);
        let text: string;
        try {
          text = utf8.decode(body);
        } catch {
          return answer(res, 400, 'the body is not UTF-8\n');
        }
        let a: ReturnType<typeof addCheckpoint>;
        try {
          a = addCheckpoint(o, text);
        } catch (e) {
          // The state could not be made durable: no cosignature, the client may retry.
          return answer(res, 503, `the witness could not record the checkpoint: ${(e as Error).message}\n`);
        }
        answer(res, a.status, a.body, a.type);
      },
      () => res.destroy(),
    );
  });
}
