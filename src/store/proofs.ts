/**
 * The ledger's Merkle roots and proofs as a store answers them (GET /v1/ledger/root, /proof,
 * /consistency): one code for both stores. A request is checked against the committed size, turned
 * into the stored nodes it needs (src/ledger/merkle), those are fetched in one read from the backend
 * (LMDB: sequential gets; PostgreSQL: one query), then combined.
 */
import { WritError } from '../errors.js';
import { consistencyNodes } from '../ledger/merkle/consistency.js';
import { bytesToHash } from '../ledger/merkle/hasher.js';
import { inclusionNodes } from '../ledger/merkle/inclusion.js';
import { combine, rootFrom, rootNodes, type NodeId, type ProofNodes } from '../ledger/merkle/tree.js';

/** T for a synchronous backend, Promise<T> for an asynchronous one. */
type Answer<T, Async extends boolean> = Async extends true ? Promise<T> : T;

/** What a backend supplies: its committed size, and the hashes of stored nodes. */
export interface NodeSource<Async extends boolean> {
  committedSize(): Answer<number, Async>;
  /** The hashes of `ids`, in the order asked, in one read; a missing node is STORE_CORRUPT or an error. */
  nodes(ids: readonly NodeId[]): Answer<Buffer[], Async>;
}

function then<T, U>(value: T | Promise<T>, f: (v: T) => U | Promise<U>): U | Promise<U> {
  return value instanceof Promise ? value.then(f) : f(value);
}

function checkSize(name: string, size: number, committed: number): void {
  if (!Number.isSafeInteger(size) || size < 0 || size > committed) {
    throw new WritError('INVALID_REQUEST', `${name} must be 0..${committed}, got ${size}`);
  }
}

export class LedgerProofs<Async extends boolean> {
  constructor(private readonly source: NodeSource<Async>) {}

  /** Merkle root of the first `size` records (default: all committed), 'sha256:<hex>'. */
  root(size?: number): Answer<string, Async> {
    return this.#answer(
      (committed) => {
        const n = size ?? committed;
        checkSize('size', n, committed);
        return rootNodes(n);
      },
      (nodes, hashes) => bytesToHash(rootFrom(nodes, hashes)),
    );
  }

  /** RFC 9162 inclusion proof of record `seq` in the tree of `size` records: lowercase hex, no prefix. */
  inclusionProof(seq: number, size: number): Answer<string[], Async> {
    return this.#answer((committed) => {
      checkSize('size', size, committed);
      if (!Number.isSafeInteger(seq) || seq < 0 || seq >= size) throw new WritError('INVALID_REQUEST', `need 0 <= seq < size (seq ${seq}, size ${size})`);
      return inclusionNodes(seq, size);
    }, toHex);
  }

  /** RFC 9162 consistency proof from the tree of `from` records to the tree of `to` records. */
  consistencyProof(from: number, to: number): Answer<string[], Async> {
    return this.#answer((committed) => {
      checkSize('to', to, committed);
      if (!Number.isSafeInteger(from) || from < 0 || from > to) throw new WritError('INVALID_REQUEST', `need 0 <= from <= to (from ${from}, to ${to})`);
      return consistencyNodes(from, to);
    }, toHex);
  }

  #answer<T>(plan: (committed: number) => ProofNodes, build: (nodes: ProofNodes, hashes: Buffer[]) => T): Answer<T, Async> {
    return then(this.source.committedSize(), (committed) => {
      const nodes = plan(committed);
      return then(this.source.nodes(nodes.ids), (hashes) => build(nodes, hashes));
    }) as Answer<T, Async>;
  }
}

function toHex(nodes: ProofNodes, hashes: Buffer[]): string[] {
  return combine(nodes, hashes).map((b) => b.toString('hex'));
}
