// @ts-check
// A pool of embedding helpers (embed-worker.js): several Web Workers, each with its own wasm
// instance and its own copy of the model, one thread each. No SharedArrayBuffer and no special
// headers needed: plain workers and postMessage. Used by worker.js for the benchmark (and by the
// comparison benchmark's page, bench/web/cmp-srbench.js). Its size: ../shared/pool-size.js.
//
// Work is handed out dynamically: `drain` asks `next()` for a chunk whenever a helper has fewer
// than PIPELINE chunks queued, so fast helpers take more and all finish together. Chunks come
// length-sorted, longest first, bounded by sentences and padded tokens
// (Evaluation.next_chunk_within), so the last chunks are the quick ones.

import { ERR, HELPER_REQ } from '../shared/protocol.js';
import { codedError } from '../shared/errors.js';
import { RpcClient } from '../shared/rpc.js';

/** Sentences per chunk handed to a helper, at most (one `embed` call there, i.e. two batches of 32). */
export const POOL_CHUNK = 64;
/** Padded tokens per chunk, at most (its longest sentence × its size): 64 sentences of up to 32
 * tokens, fewer of longer ones, one of a whole-context paragraph. A chunk then costs about what
 * its tokens cost, and a few long texts no longer hold one helper while the others idle. */
export const POOL_TOKENS = 64 * 32;
/** Chunks queued per helper: the next one is already there when one finishes. */
const PIPELINE = 2;
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

/**
 * A helper with work that has not answered for this long is taken for dead: a worker that stops
 * (closed, killed by the browser) may fire no event at all, and its chunks would never come back.
 * Chunks come longest first, so a later chunk is no slower than the slowest one seen: the
 * deadline is STALL_FACTOR × that, at least STALL_FLOOR_MS; before any chunk is back,
 * STALL_FIRST_MS. A helper taken for dead wrongly only costs time: its chunks are redone.
 */
const STALL_FLOOR_MS = 15_000;
const STALL_FACTOR = 5;
const STALL_FIRST_MS = 180_000;
/** How often the pool looks for a helper past its deadline. */
const WATCH_EVERY_MS = 1000;
/** Helpers replaced within one run before it is given up as interrupted. */
const MAX_REPLACEMENTS = 4;

/**
 * A diagnostic for tests and the devtools console (the soak test reads it in each worker):
 * `self.srBenchWasmBytes()` is the size of this worker's wasm memory, which only grows.
 * @param {{memory: WebAssembly.Memory}} exports  what the wasm module's `init` resolves to
 */
export function exposeWasmMemory(exports) {
  self.srBenchWasmBytes = () => exports.memory.buffer.byteLength;
}

/** One helper (embed-worker.js), asked through the same request/response client as the engine. */
class Helper extends RpcClient {
  constructor(url, name) {
    super(new Worker(url, { type: 'module', name }));
    /** Chunks sent and not yet answered. @type {Set<object>} */
    this.work = new Set();
    /** When it last answered, or was handed work while idle (for the stall deadline). */
    this.since = 0;
    this.dead = false;
    this.worker.addEventListener('error', (e) => {
      e.preventDefault();
      this.stop(`an engine helper failed: ${e.message || 'it could not start'}`);
    });
  }

  /** Stops the worker and fails what it was asked (its chunks are then redone elsewhere). */
  stop(why = 'the engine helper was stopped') {
    this.dead = true;
    this.worker.terminate();
    this.failAll(why);
  }
}

export class EmbedPool {
  /**
   * Starts `size` helpers and loads the model in each (in parallel).
   * `maxSeqLength`: the truncation the engine's model was loaded with (null: the file's);
   * `prefix`: the text its model puts before every input (`Model.info().prefix`).
   * @param {{size: number, module: WebAssembly.Module, bytes: Uint8Array, workerUrl: URL|string,
   *          maxSeqLength?: number|null, prefix: string}} opts
   */
  static async start(opts) {
    const pool = new EmbedPool(opts);
    try {
      const ready = await Promise.all(Array.from({ length: opts.size }, (_, i) => pool.#spawn(i)));
      pool.helpers = ready.map((r) => r.helper);
      pool.loadMs = Math.max(...ready.map((r) => r.load_ms));
    } catch (e) {
      pool.terminate();
      throw e;
    }
    return pool;
  }

  constructor(opts) {
    this.opts = opts;
    /** @type {Helper[]} */
    this.helpers = [];
    this.loadMs = 0;
    /** The slowest chunk any helper took (ms): the stall deadline follows it. */
    this.slowestMs = 0;
    this.terminated = false;
    /** Helpers being started (also replacements), so terminate() stops them too. */
    this.starting = new Set();
  }

  get size() {
    return this.opts.size;
  }

  /** Starts helper number `i` and loads the model in it. */
  async #spawn(i) {
    const { module, bytes, workerUrl, maxSeqLength = null, prefix } = this.opts;
    const helper = new Helper(workerUrl, `sr-bench-embed-${i + 1}`);
    this.starting.add(helper);
    try {
      // Each helper gets its own copy of the bytes (structured clone); the module is shared.
      const r = await helper.call(HELPER_REQ.INIT, { module, bytes, max_seq_length: maxSeqLength, prefix });
      if (this.terminated) throw new Error('the pool was stopped');
      return { helper, load_ms: r.load_ms };
    } catch (e) {
      helper.stop();
      throw e;
    } finally {
      this.starting.delete(helper);
    }
  }

  terminate() {
    this.terminated = true;
    for (const h of [...this.helpers, ...this.starting]) h.stop();
    this.helpers = [];
  }

  deadlineMs() {
    return this.slowestMs > 0 ? Math.max(STALL_FLOOR_MS, STALL_FACTOR * this.slowestMs) : STALL_FIRST_MS;
  }

  /**
   * Embeds chunks until `next()` returns null (or `stop()` turns true), dynamically balanced.
   * `accept(chunk, embeddings, ms)` is called on this thread as each chunk comes back (in any
   * order). A helper that dies (an `error` event, or no answer within `deadlineMs`) is replaced
   * and its chunks are handed out again; `onReplace(message)` says so. Resolves when every chunk
   * is back; rejects on the first failure of a live helper, or with code "interrupted" after
   * MAX_REPLACEMENTS replacements.
   * @template {{texts: string[]}} C
   * @param {() => C|null} next
   * @param {(chunk: C, embeddings: Float32Array, ms: number) => void} accept
   * @param {() => boolean} [stop]
   * @param {(message: string) => void} [onReplace]
   */
  drain(next, accept, stop = () => false, onReplace = () => {}) {
    return new Promise((resolve, reject) => {
      let exhausted = false;
      let settled = false;
      let replaced = 0;
      /** Chunks of dead helpers, handed out again before new ones. @type {C[]} */
      const redo = [];
      const busy = () => this.helpers.some((h) => h.work.size > 0);
      const settle = (e) => {
        if (settled) return;
        settled = true;
        clearInterval(watch);
        if (e) reject(e); else resolve();
      };
      const finishIfDone = () => {
        if (exhausted && redo.length === 0 && !busy()) settle();
      };
      const take = () => {
        if (redo.length) return redo.shift();
        if (exhausted) return null;
        if (stop()) {
          exhausted = true;
          redo.length = 0;
          return null;
        }
        const chunk = next();
        if (!chunk || chunk.texts.length === 0) {
          exhausted = true;
          return null;
        }
        return chunk;
      };
      const feed = (h) => {
        while (!settled && !h.dead && h.work.size < PIPELINE) {
          let chunk;
          try {
            chunk = take();
          } catch (e) {
            settle(e);
            return;
          }
          if (!chunk) break;
          if (h.work.size === 0) h.since = performance.now();
          h.work.add(chunk);
          h.call(HELPER_REQ.EMBED, { texts: chunk.texts }).then((r) => {
            h.work.delete(chunk);
            h.since = performance.now();
            this.slowestMs = Math.max(this.slowestMs, r.ms);
            if (settled) return;
            try {
              accept(chunk, r.embeddings, r.ms);
            } catch (e) {
              settle(e);
              return;
            }
            feed(h);
            finishIfDone();
          }, (e) => {
            if (h.dead) replace(h, e.message);
            else settle(e);
          });
        }
        finishIfDone();
      };
      /** A dead helper: its chunks go back in the queue and a fresh helper takes its place. */
      const replace = (h, why) => {
        const i = this.helpers.indexOf(h);
        if (i < 0 || settled) return; // already replaced
        if (this.terminated) {
          settle(codedError(ERR.INTERRUPTED, 'the engine helpers were stopped'));
          return;
        }
        redo.push(...h.work);
        h.work.clear();
        this.helpers.splice(i, 1);
        replaced++;
        if (replaced > MAX_REPLACEMENTS) {
          settle(codedError(ERR.INTERRUPTED, `engine helpers kept stopping (${MAX_REPLACEMENTS} replaced in this run).`));
          return;
        }
        onReplace(`An engine helper stopped (${why}); it was replaced and its sentences are redone (${replaced} replaced in this run).`);
        for (const other of this.helpers) feed(other); // they may take the dead helper's chunks
        this.#spawn(i).then(({ helper }) => {
          if (this.terminated) {
            helper.stop();
            return;
          }
          this.helpers.push(helper);
          feed(helper);
        }, (e) => settle(codedError(ERR.INTERRUPTED, `a replacement engine helper could not start: ${e.message}`)));
      };
      const watch = setInterval(() => {
        const now = performance.now();
        for (const h of [...this.helpers]) {
          if (h.work.size > 0 && now - h.since > this.deadlineMs()) {
            h.stop(`no answer for ${Math.round((now - h.since) / 1000)} s`); // fails its calls → replace(h)
          }
        }
      }, WATCH_EVERY_MS);
      for (const h of [...this.helpers]) feed(h);
    });
  }
}
