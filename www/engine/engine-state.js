// @ts-check
// The engine worker's state and the small tools worker.js and evaluate.js share. The state is
// one object, made once by worker.js and handed to every handler.

import { ERR } from '../shared/protocol.js';
import { codedError } from '../shared/errors.js';

/** The engine's state: the wasm module, the loaded model, the run, the pool. */
export function createEngineState() {
  return {
    /** @type {Promise<void>|null} */
    wasmReady: null,
    /** The compiled wasm module (shared with the pool's helpers). @type {WebAssembly.Module|null} */
    wasmModule: null,
    /** @type {import('../pkg/sr_bench.js').Model|null} */
    model: null,
    /** `Model.info()` of the loaded model. @type {import('../shared/protocol.js').ModelInfo|null} */
    info: null,
    /** The loaded model's file and manifest entry: the pool's helpers load their own copy. */
    bytes: null,
    entry: null,
    /** The truncation the model was loaded with (a local file's field), null: the file's own. */
    maxSeqLength: null,
    loadSeq: 0,
    /** @type {AbortController|null} */
    loadAbort: null,
    /** The running benchmark, if any. @type {{id: number, cancelled: boolean, reason: string, done: Promise<void>}|null} */
    run: null,
    /** The benchmark's pool of embedding helpers, for `entry`. @type {{key: string, size: number, ready: Promise<import('./pool.js').EmbedPool>}|null} */
    pool: null,
    /** Benchmark data files already fetched (path → bytes). */
    dataFiles: new Map(),
    /** See `exclusive`. */
    queue: Promise.resolve(),
  };
}

/** The GPU encoder refuses overlapping batches ("busy"), and a model cannot be freed while one
 * of its async calls is in flight: every async use of a model, and its free(), queue up here. */
export function exclusive(engine, task) {
  const result = engine.queue.then(task);
  engine.queue = result.catch(() => {});
  return result;
}

export const post = (msg, transfer) => self.postMessage(msg, transfer || []);

export const yieldToEvents = () => new Promise((r) => setTimeout(r, 0));

/** wasm-bindgen/serde may hand back Maps for JSON objects; the page and exports want plain objects. */
export function toPlain(v) {
  if (v instanceof Map) {
    const o = {};
    for (const [k, x] of v) o[k] = toPlain(x);
    return o;
  }
  if (Array.isArray(v)) return v.map(toPlain);
  if (v && typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype) {
    const o = {};
    for (const k of Object.keys(v)) o[k] = toPlain(v[k]);
    return o;
  }
  return v;
}

/** `Model.backend_status()` (Rust fills it all: request, adapter, fallback reason, notices). */
export function backendStatus(model) {
  return model ? toPlain(model.backend_status()) : null;
}

export function requireModel(engine) {
  if (!engine.model) throw codedError(ERR.NO_MODEL, 'No model is loaded yet.');
  return engine.model;
}

export function cancelRun(engine, reason) {
  const run = engine.run;
  if (run && !run.cancelled) {
    run.cancelled = true;
    run.reason = reason;
  }
}

export function dropPool(engine) {
  if (engine.pool) {
    const old = engine.pool;
    engine.pool = null;
    old.ready.then((p) => p.terminate(), () => {});
  }
}
