// A pool of embedding helpers (embed-worker.js): several Web Workers, each with its own wasm
// instance and its own copy of the model, one thread each. No SharedArrayBuffer and no special
// headers needed: plain workers and postMessage. Used by worker.js for the benchmark and by
// bench.js.
//
// Work is handed out dynamically: `drain` asks `next()` for a chunk whenever a helper has fewer
// than PIPELINE chunks queued, so fast helpers take more and all finish together. Chunks come
// length-sorted, longest first (Evaluation.next_chunk), so the last chunks are the quick ones.

import { ERR } from './protocol.js';
import { codedError } from './errors.js';
import { RpcClient } from './rpc.js';

/** Sentences per chunk handed to a helper (one `embed` call there, i.e. two batches of 32). */
export const POOL_CHUNK = 64;
/** Chunks queued per helper: the next one is already there when one finishes. */
const PIPELINE = 2;
/** Most helpers we start, whatever the core count. */
const MAX_HELPERS = 8;
/** Memory we let the helpers take together, at most: 2 GB, or a quarter of the device's RAM. */
const MEMORY_BUDGET = 2e9;

/**
 * The memory the page lets its wasm instances take, in bytes: MEMORY_BUDGET, or a quarter of
 * the device's RAM where the browser says (navigator.deviceMemory, GB, Chromium only: it is
 * what keeps a phone-class tab alive). A model file whose one instance needs more is refused.
 */
export function memoryBudget() {
  const nav = typeof navigator !== 'undefined' ? navigator : {};
  return nav.deviceMemory ? Math.min(MEMORY_BUDGET, (nav.deviceMemory * 1e9) / 4) : MEMORY_BUDGET;
}

/**
 * How many helpers to start: one per logical core, at most MAX_HELPERS, fewer for big models.
 * `workerBytes`: what one helper needs (its weights as held in wasm plus one batch's
 * activations), estimated by Rust: `Model.estimate_worker_bytes()` / `estimate_worker_bytes(info)`.
 * This side only knows the browser's budget: cores and navigator.deviceMemory.
 * @param {number|bigint} workerBytes
 */
export function defaultPoolSize(workerBytes) {
  const nav = typeof navigator !== 'undefined' ? navigator : {};
  const cores = nav.hardwareConcurrency || 1;
  const budget = memoryBudget();
  const bytes = Number(workerBytes);
  const byMemory = bytes > 0 ? Math.floor(budget / bytes) : 1; // unknown: no pool
  return Math.max(1, Math.min(cores, MAX_HELPERS, byMemory));
}

/** Compiles the wasm module once; helpers instantiate the same compiled module. */
export async function compileWasm(url) {
  try {
    return await WebAssembly.compileStreaming(fetch(url));
  } catch {
    // e.g. a server that does not send application/wasm
    const res = await fetch(url);
    if (!res.ok) throw codedError(ERR.NETWORK, `GET ${url}: HTTP ${res.status}`);
    return WebAssembly.compile(await res.arrayBuffer());
  }
}

/** One helper (embed-worker.js), asked through the same request/response client as the engine. */
class Helper extends RpcClient {
  constructor(url, name) {
    super(new Worker(url, { type: 'module', name }));
    this.queued = 0;
    this.worker.addEventListener('error', (e) => {
      e.preventDefault();
      this.failAll(`an engine helper failed: ${e.message || 'it could not start'}`);
    });
  }

  terminate() {
    this.worker.terminate();
    this.failAll('the engine helper was stopped');
  }
}

export class EmbedPool {
  /**
   * Starts `size` helpers and loads the model in each (in parallel).
   * `maxSeqLength`: the truncation the engine's model was loaded with (null: the file's).
   * @param {{size: number, module: WebAssembly.Module, bytes: Uint8Array, workerUrl: URL|string,
   *          maxSeqLength?: number|null}} opts
   */
  static async start({ size, module, bytes, workerUrl, maxSeqLength = null }) {
    const helpers = [];
    for (let i = 0; i < size; i++) helpers.push(new Helper(workerUrl, `sr-bench-embed-${i + 1}`));
    const pool = new EmbedPool(helpers);
    try {
      // Each helper gets its own copy of the bytes (structured clone); the module is shared.
      const ready = await Promise.all(helpers.map((h) => h.call('init', { module, bytes, max_seq_length: maxSeqLength })));
      pool.loadMs = Math.max(...ready.map((r) => r.load_ms));
    } catch (e) {
      pool.terminate();
      throw e;
    }
    return pool;
  }

  constructor(helpers) {
    this.helpers = helpers;
    this.loadMs = 0;
  }

  get size() {
    return this.helpers.length;
  }

  terminate() {
    for (const h of this.helpers) h.terminate();
    this.helpers = [];
  }

  /**
   * Embeds chunks until `next()` returns null (or `stop()` turns true), dynamically balanced.
   * `accept(chunk, embeddings, ms)` is called on this thread as each chunk comes back (in any
   * order). Resolves when every chunk handed out is back; rejects on the first failure.
   * @template {{texts: string[]}} C
   * @param {() => C|null} next
   * @param {(chunk: C, embeddings: Float32Array, ms: number) => void} accept
   * @param {() => boolean} [stop]
   */
  drain(next, accept, stop = () => false) {
    return new Promise((resolve, reject) => {
      let inflight = 0;
      let exhausted = false;
      let failed = false;
      const fail = (e) => {
        if (!failed) {
          failed = true;
          reject(e);
        }
      };
      const feed = (h) => {
        while (!failed && !exhausted && h.queued < PIPELINE) {
          if (stop()) {
            exhausted = true;
            break;
          }
          let chunk;
          try {
            chunk = next();
          } catch (e) {
            fail(e);
            return;
          }
          if (!chunk || chunk.texts.length === 0) {
            exhausted = true;
            break;
          }
          h.queued++;
          inflight++;
          h.call('embed', { texts: chunk.texts }).then((r) => {
            h.queued--;
            inflight--;
            if (failed) return;
            try {
              accept(chunk, r.embeddings, r.ms);
            } catch (e) {
              fail(e);
              return;
            }
            feed(h);
            if (exhausted && inflight === 0) resolve();
          }, fail);
        }
        if (exhausted && inflight === 0 && !failed) resolve();
      };
      for (const h of this.helpers) feed(h);
    });
  }
}
