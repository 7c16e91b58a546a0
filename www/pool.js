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
/** Memory we let the helpers take together, at most: 2 GB, or a quarter of the device's RAM. */
const MEMORY_BUDGET = 2e9;
/** Dequantized weights above this stay quantized in the file's bytes (Rust: DENSE_LIMIT_BYTES). */
const DENSE_LIMIT = 256 * 2 ** 20;
/** Activations of one batch per byte of f32 weights: a batch is ≤ 32 sentences and ≤ 8 ×
 * max_seq_length padded tokens (Rust: Batching::for_model); MPNet's worst case measured 290 MB
 * above its weights (436 MB as f32). Both grow with the hidden size and the sequence limit. */
const ACTIVATIONS_PER_WEIGHT = 0.7;

/**
 * How many helpers to start: one per logical core, at most MAX_HELPERS, fewer for big models.
 * A helper holds the weights dequantized to f32 (~4× a q8_0 file, ~8× a q4_0 file) when that
 * stays under DENSE_LIMIT, else the file's bytes (~1.5× the file), plus one batch's activations.
 * @param {{bytes: number, dtype: string}} entry  the model's manifest entry
 */
export function defaultPoolSize(entry) {
  const nav = typeof navigator !== 'undefined' ? navigator : {};
  const cores = nav.hardwareConcurrency || 1;
  // deviceMemory (GB, Chromium only) is what keeps a phone-class tab alive.
  const budget = nav.deviceMemory ? Math.min(MEMORY_BUDGET, (nav.deviceMemory * 1e9) / 4) : MEMORY_BUDGET;
  const expand = { f32: 1, f16: 2, q8_0: 3.7, q4_0: 5.8 }[entry.dtype] ?? 4; // measured: f32 file / this file
  const dense = entry.bytes * expand;
  const weights = dense <= DENSE_LIMIT ? dense : entry.bytes * 1.5;
  const byMemory = Math.floor(budget / (weights + dense * ACTIVATIONS_PER_WEIGHT));
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
