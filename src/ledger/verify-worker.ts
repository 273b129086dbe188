/**
 * Worker thread of the parallel verifier (verify-parallel.ts): examines each block of lines it is
 * sent and answers with its findings, handing the block's memory back for reuse.
 */
import { parentPort } from 'node:worker_threads';
import { examineBlock } from './verify-block.js';
import type { BlockReport, BlockRequest } from './verify-parallel.js';

const port = parentPort;
if (!port) throw new Error('verify-worker.js runs only as a worker thread');

port.on('message', ({ id, buffer, length }: BlockRequest) => {
  const findings = examineBlock(Buffer.from(buffer, 0, length));
  const report: BlockReport = { id, buffer, length, ...findings };
  port.postMessage(report, [buffer]);
});
