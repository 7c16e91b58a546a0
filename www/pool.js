// A pool of embedding helpers (embed-worker.js): several Web Workers, each with its own wasm
// instance and its own copy of the model, one thread each. No SharedArrayBuffer and no special
// headers needed: plain workers and postMessage. Used by worker.js for the benchmark and by
// bench.js.
//
// Work is handed out dynamically: `drain` asks `next()` for a chunk whenever a helper has fewer
// than PIPELINE chunks queued, so fast helpers take more and all finish together. Chunks come
// length-sorted, longest first (Evaluation.next_chunk), so the last chunks are the quick ones.

/** Sentences per chunk handed to a helper (one `embed` call there, i.e. two batches of 32). */
export const POOL_CHUNK = 64;
/** Chunks queued per helper: the next one is already there when one finishes. */
const PIPELINE = 2;
/** Most helpers we start, whatever the core count. */
const MAX_HELPERS = 8;
/** Memory we let the helpers' models take together. */
const MEMORY_BUDGET = 2e9;

/**
 * How many helpers to start: one per logical core, at most MAX_HELPERS, fewer for big models
 * (each helper holds the weights as f32, ~4× a q8_0 file, ~8× a q4_0 file).
 * @param {{bytes: number, dtype: string}} entry  the model's manifest entry
 */
export function defaultPoolSize(entry) {
  const cores = (typeof navigator !== 'undefined' && navigator.hardwareConcurrency) || 1;
  const expand = { f32: 1.1, f16: 2.2, q8_0: 4.5, q4_0: 8 }[entry.dtype] ?? 4.5;
  const perHelper = entry.bytes * expand + 64e6;
  const byMemory = Math.max(1, Math.floor(MEMORY_BUDGET / perHelper));
  return Math.max(1, Math.min(cores, MAX_HELPERS, byMemory));
}

/** Compiles the wasm module once; helpers instantiate the same compiled module. */
export async function compileWasm(url) {
  try {
    return await WebAssembly.compileStreaming(fetch(url));
  } catch {
    // e.g. a server that does not send application/wasm
    const res = await fetch(url);
    if (!res.ok) throw new Error(`GET ${url}: HTTP ${res.status}`);
    return WebAssembly.compile(await res.arrayBuffer());
  }
}

class Helper {
  constructor(url, name) {
    this.worker = new Worker(url, { type: 'module', name });
    this.nextId = 1;
    /** @type {Map<number, {resolve: Function, reject: Function}>} */
    this.pending = new Map();
    this.queued = 0;
    this.worker.addEventListener('message', (e) => {
      const msg = e.data || {};
      const p = this.pending.get(msg.id);
      if (!p) return;
      this.pending.delete(msg.id);
      if (msg.type === 'error') p.reject(new Error(msg.message));
      else p.resolve(msg);
    });
    this.worker.addEventListener('error', (e) => {
      e.preventDefault();
      this.failAll(`an engine helper failed: ${e.message || 'it could not start'}`);
    });
  }

  request(msg, transfer = []) {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.worker.postMessage({ ...msg, id }, transfer);
    });
  }

  failAll(message) {
    for (const [, p] of this.pending) p.reject(new Error(message));
    this.pending.clear();
  }

  terminate() {
    this.worker.terminate();
    this.failAll('the engine helper was stopped');
  }
}

export class EmbedPool {
  /**
   * Starts `size` helpers and loads the model in each (in parallel).
   * @param {{size: number, module: WebAssembly.Module, bytes: Uint8Array, workerUrl: URL|string}} opts
   */
  static async start({ size, module, bytes, workerUrl }) {
    const helpers = [];
    for (let i = 0; i < size; i++) helpers.push(new Helper(workerUrl, `sr-bench-embed-${i + 1}`));
    const pool = new EmbedPool(helpers);
    try {
      // Each helper gets its own copy of the bytes (structured clone); the module is shared.
      const ready = await Promise.all(helpers.map((h) => h.request({ type: 'init', module, bytes })));
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
          h.request({ type: 'embed', texts: chunk.texts }).then((r) => {
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
