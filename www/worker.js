// The engine worker (module worker): owns the wasm module, the loaded model and the benchmark run.
// Message protocol: see protocol.js.

import init, { Model, Evaluation } from './pkg/sr_bench.js';
import { ERR, SR_FILES, EVAL_CHUNK } from './protocol.js';
import { loadModelBytes } from './cache.js';
import { EmbedPool, POOL_CHUNK, compileWasm, defaultPoolSize } from './pool.js';

/** @type {Promise<void>|null} */
let wasmReady = null;
/** @type {Model|null} */
let model = null;
/** @type {import('./protocol.js').ModelInfo|null} */
let modelInfo = null;
let loadSeq = 0;
/** @type {AbortController|null} */
let loadAbort = null;
/** The running benchmark, if any. @type {{id: number, cancelled: boolean, reason: string, done: Promise<void>}|null} */
let run = null;
/** Benchmark data files already fetched (name → bytes). */
const dataFiles = new Map();
/** The compiled wasm module (shared with the pool's helpers). @type {WebAssembly.Module|null} */
let wasmModule = null;
/** The loaded model's file and manifest entry: the pool's helpers load their own copy. */
let modelBytes = null;
let modelEntry = null;
/** The benchmark's pool of embedding helpers, for `modelEntry`. @type {{key: string, size: number, ready: Promise<EmbedPool>}|null} */
let pool = null;
/** The model was loaded with `load_with_backend` ("webgpu"/"auto"): its GPU is reached only
 * through the async methods, which fall back to the CPU by themselves. */
let modelIsAsync = false;
/** Set when WebGPU was asked for but the model had to be loaded on the CPU: `{requested, reason}`. */
let loadFallback = null;
/** The browser's own GPUAdapterInfo for the model's adapter: wgpu gets no name from it in the
 * browser ("unnamed adapter"), while `info` says e.g. vendor "google", architecture "swiftshader". */
let adapterInfo = null;

/** The page's backend names → the wasm API's (`Model.load_with_backend`); "cpu" keeps `Model.load`. */
const API_BACKEND = Object.freeze({ webgpu: 'gpu', auto: 'auto' });
/** A GPU run hands out chunks sized to take about this long, so cancel and a playground
 * request (which waits for the GPU) are answered quickly even on a slow software adapter. */
const GPU_CHUNK_SECONDS = 1;
const GPU_CHUNK_MIN = 4;
const GPU_CHUNK_MAX = 64;

// The GPU encoder refuses overlapping batches ("busy"), and a model cannot be freed while one of
// its async calls is in flight: every async use of a model, and its free(), queue up here.
let modelQueue = Promise.resolve();
function exclusive(task) {
  const result = modelQueue.then(task);
  modelQueue = result.catch(() => {});
  return result;
}

const post = (msg, transfer) => self.postMessage(msg, transfer || []);

function codedError(code, message, reason) {
  const e = new Error(message);
  e.code = code;
  if (reason) e.reason = reason;
  return e;
}

function messageOf(e) {
  if (e instanceof Error) return e.message;
  if (typeof e === 'string') return e;
  try { return JSON.stringify(e); } catch { return String(e); }
}

function ensureWasm() {
  if (!wasmReady) {
    wasmReady = compileWasm(new URL('./pkg/sr_bench_bg.wasm', import.meta.url))
      .then((module) => {
        wasmModule = module;
        return init({ module_or_path: module });
      })
      .catch((e) => {
        wasmReady = null;
        throw codedError(ERR.ENGINE, `The WebAssembly engine could not start: ${messageOf(e)}`);
      });
  }
  return wasmReady;
}

/** wasm-bindgen/serde may hand back Maps for JSON objects; the page and exports want plain objects. */
function toPlain(v) {
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

const yieldToEvents = () => new Promise((r) => setTimeout(r, 0));

/** `Model.backend_status()` of the loaded model, plus the reason when WebGPU was asked for and
 * the model had to be loaded on the CPU instead. */
function backendStatus(m = model) {
  if (!m) return null;
  const status = toPlain(m.backend_status());
  if (status.adapter && adapterInfo) status.adapter.browser_info = adapterInfo;
  if (loadFallback && m === model) {
    status.requested = loadFallback.requested;
    status.fallback_reason = loadFallback.reason;
    status.notices = [loadFallback.reason, ...status.notices];
  }
  return status;
}

/** `{vendor, architecture, device, description}` of the adapter this browser hands out, or null. */
async function browserAdapterInfo() {
  try {
    const adapter = await navigator.gpu.requestAdapter();
    const i = adapter && adapter.info;
    return i ? { vendor: i.vendor, architecture: i.architecture, device: i.device, description: i.description } : null;
  } catch {
    return null; // only a description: never a reason to fail
  }
}

/**
 * Loads the model for the page's backend choice. WebGPU failing (no adapter, a refused device,
 * a model the GPU kernels do not support) never fails the load: the CPU takes over, and
 * `fallback` says why.
 */
async function loadForBackend(bytes, backend, file) {
  const wanted = API_BACKEND[backend];
  let fallback = null;
  if (wanted) {
    try {
      return { model: await Model.load_with_backend(bytes, wanted), isAsync: true, fallback };
    } catch (e) {
      fallback = { requested: wanted, reason: `${messageOf(e)}; running on the CPU` }; // as "auto" words it
    }
  }
  try {
    return { model: Model.load(bytes), isAsync: false, fallback };
  } catch (e) {
    throw codedError(ERR.BAD_MODEL, `${file} could not be loaded: ${messageOf(e)}`);
  }
}

function cancelRun(reason) {
  if (run && !run.cancelled) {
    run.cancelled = true;
    run.reason = reason;
  }
}

// ---------------------------------------------------------------- handlers

async function onLoad(msg) {
  const seq = ++loadSeq;
  if (loadAbort) loadAbort.abort();
  const abort = new AbortController();
  loadAbort = abort;
  if (run) {
    cancelRun('model-changed');
    await run.done;
  }
  const superseded = () => seq !== loadSeq;
  const started = performance.now();
  const phaseStart = {};
  const onProgress = (phase, done, total, unit) => {
    if (superseded()) return;
    phaseStart[phase] ??= performance.now();
    post({ type: 'progress', id: msg.id, phase, done, total, unit, elapsed_ms: performance.now() - phaseStart[phase] });
  };
  const onNotice = (level, code, message) => post({ type: 'notice', id: msg.id, level, code, message });

  await ensureWasm();
  let got;
  try {
    got = await loadModelBytes(msg.model, msg.baseUrl, { onProgress, onNotice, signal: abort.signal });
  } catch (e) {
    if (superseded() || (e && e.name === 'AbortError')) throw codedError(ERR.SUPERSEDED, 'Another model was chosen.');
    throw e;
  }
  if (superseded()) throw codedError(ERR.SUPERSEDED, 'Another model was chosen.');
  onProgress('init', 0, 1, 'steps');
  await yieldToEvents();
  const t0 = performance.now();
  const loaded = await loadForBackend(got.bytes, msg.backend || 'cpu', msg.model.file);
  const next = loaded.model;
  const nextAdapterInfo = next.backend === 'gpu' ? await browserAdapterInfo() : null;
  const info = toPlain(next.info());
  const init_ms = performance.now() - t0;
  if (superseded()) {
    next.free();
    throw codedError(ERR.SUPERSEDED, 'Another model was chosen.');
  }
  if (run) { // a run started on the old model while this one was downloading
    cancelRun('model-changed');
    await run.done;
  }
  const old = model;
  model = next;
  modelInfo = info;
  modelIsAsync = loaded.isAsync;
  loadFallback = loaded.fallback;
  adapterInfo = nextAdapterInfo;
  if (old) exclusive(() => old.free()); // after any similarity still in flight on it
  modelBytes = got.bytes;
  modelEntry = msg.model;
  dropPool();
  if (loadAbort === abort) loadAbort = null;
  return {
    info,
    backend: typeof next.backend === 'string' ? next.backend : 'cpu',
    backend_status: backendStatus(next),
    entry: msg.model,
    source: got.source,
    timings: { fetch_ms: got.fetch_ms, verify_ms: got.verify_ms, init_ms, total_ms: performance.now() - started },
  };
}

function requireModel() {
  if (!model) throw codedError(ERR.NO_MODEL, 'No model is loaded yet.');
  return model;
}

function similarityOf(m, a, b, cosine, t0) {
  const static_cosine = m.static_similarity(a, b); // the word table only: always on the CPU
  const ms = performance.now() - t0;
  // Tokens after truncation (special tokens included): equal to max_seq_length means cut off.
  const tokens = typeof m.token_count === 'function' ? [m.token_count(a), m.token_count(b)] : null;
  return { cosine, static_cosine, ms, tokens, backend_status: backendStatus(m) };
}

function onSimilarity(msg) {
  const m = requireModel();
  const a = String(msg.a);
  const b = String(msg.b);
  if (!modelIsAsync) {
    const t0 = performance.now();
    return similarityOf(m, a, b, m.similarity(a, b), t0);
  }
  // The GPU is reached only asynchronously; the timer starts when the GPU is ours (a run's chunk may be ahead).
  return exclusive(async () => {
    const t0 = performance.now();
    return similarityOf(m, a, b, await m.similarity_async(a, b), t0);
  });
}

function onEmbed(msg) {
  const m = requireModel();
  const texts = msg.texts.map(String);
  if (modelIsAsync) return exclusive(async () => ({ embeddings: await m.embed_async(texts), dim: m.dim }));
  return { embeddings: m.embed(texts), dim: m.dim };
}

async function fetchData(path, baseUrl) {
  if (dataFiles.has(path)) return dataFiles.get(path);
  const url = new URL(path, baseUrl).href;
  let res;
  try {
    res = await fetch(url);
  } catch (e) {
    throw codedError(ERR.NETWORK, `Could not download ${path}: ${messageOf(e)}`);
  }
  if (!res.ok) throw codedError(ERR.NETWORK, `Could not download ${path}: HTTP ${res.status}`);
  const bytes = new Uint8Array(await res.arrayBuffer());
  dataFiles.set(path, bytes);
  return bytes;
}

function dropPool() {
  if (pool) {
    const old = pool;
    pool = null;
    old.ready.then((p) => p.terminate(), () => {});
  }
}

/**
 * The pool for the loaded model, started on first use and kept for later runs. `workers`:
 * the requested size (0/undefined = one per core, capped; 1 = no pool: embed in this worker).
 * Resolves to null when no pool is to be used.
 */
function getPool(workers, onStart) {
  if (!model || !modelBytes || !wasmModule || model.backend !== 'cpu') return Promise.resolve(null);
  const size = workers > 0 ? Math.min(workers, 16) : defaultPoolSize(modelEntry);
  if (size < 2 || typeof Worker === 'undefined') return Promise.resolve(null);
  const key = `${modelEntry.sha256}/${size}`;
  if (!pool || pool.key !== key) {
    dropPool();
    onStart(size);
    const ready = EmbedPool.start({
      size, module: wasmModule, bytes: modelBytes, workerUrl: new URL('./embed-worker.js', import.meta.url),
    });
    pool = { key, size, ready };
    ready.catch(() => { if (pool && pool.ready === ready) pool = null; });
  }
  return pool.ready;
}

async function onEvaluate(msg) {
  if (run) throw codedError(ERR.BUSY, 'A benchmark is already running: cancel it first.');
  const m = requireModel();
  const info = modelInfo;
  let finished;
  const me = { id: msg.id, cancelled: false, reason: '', done: new Promise((r) => { finished = r; }) };
  run = me;
  let ev = null;
  const progress = (phase, done, total, unit, elapsed_ms) =>
    post({ type: 'progress', id: msg.id, phase, done, total, unit, elapsed_ms });
  const checkCancel = () => {
    if (me.cancelled) {
      const why = me.reason === 'model-changed' ? 'the model was changed' : 'you cancelled it';
      throw codedError(ERR.CANCELLED, `Benchmark cancelled: ${why}.`, me.reason);
    }
  };
  try {
    const t0 = performance.now();
    const paths = [...SR_FILES.map((f) => `data/sr/${f}.csv`), 'data/stsb/stsb-en-test.csv'];
    const bytes = [];
    for (let i = 0; i < paths.length; i++) {
      progress('data', i, paths.length, 'files', performance.now() - t0);
      bytes.push(await fetchData(paths[i], msg.baseUrl));
      checkCancel();
    }
    progress('data', paths.length, paths.length, 'files', performance.now() - t0);
    const t1 = performance.now();
    try {
      ev = new Evaluation(msg.split, msg.encoder || 'model');
      SR_FILES.forEach((f, i) => ev.add_sr_file(f, bytes[i]));
      ev.set_stsb_test(bytes[SR_FILES.length]);
    } catch (e) {
      throw codedError(ERR.DATA, messageOf(e));
    }
    const total = ev.prepare(m);
    let engines = null;
    // A model running on the GPU embeds the chunks itself (embed_async); the CPU pool is for CPU models.
    const onGpu = (msg.encoder || 'model') === 'model' && modelIsAsync && m.backend === 'gpu';
    if ((msg.encoder || 'model') === 'model' && !onGpu) {
      try {
        engines = await getPool(Number(msg.workers) || 0, (size) => progress('prepare', 0, size, 'workers', 0));
      } catch (e) {
        // No pool (e.g. nested workers unavailable): embed here, one thread, as before.
        post({ type: 'notice', id: msg.id, level: 'info', code: 'pool-unavailable', message: `Running on one thread: ${messageOf(e)}` });
        engines = null;
      }
      checkCancel();
    }
    const t2 = performance.now();
    progress('evaluate', 0, total, 'sentences', 0);
    let done = 0;
    let embedMs = 0;
    if (engines) {
      // Helpers embed length-sorted chunks (longest first); this worker only books them in,
      // so it stays free for similarity requests and cancel.
      try {
        await engines.drain(
          () => ev.next_chunk(POOL_CHUNK),
          (chunk, embeddings) => {
            done = ev.accept_embeddings(chunk.start, chunk.texts.length, embeddings);
            progress('evaluate', done, total, 'sentences', performance.now() - t2);
          },
          () => me.cancelled,
        );
      } catch (e) {
        dropPool();
        throw codedError(ERR.ENGINE, `An engine helper failed: ${messageOf(e)}`);
      }
      checkCancel();
      embedMs = performance.now() - t2;
    } else if (onGpu) {
      done = await embedOnGpu(m, ev, me.id, total, t2, checkCancel);
      embedMs = performance.now() - t2;
    } else {
      while (!ev.is_done()) {
        const s = performance.now();
        done = ev.step(m, EVAL_CHUNK);
        embedMs += performance.now() - s;
        progress('evaluate', done, total, 'sentences', performance.now() - t2);
        await yieldToEvents(); // lets cancel / similarity / load messages in
        checkCancel();
      }
    }
    const t3 = performance.now();
    const report = toPlain(ev.finish(info.name, info.dtype));
    const t4 = performance.now();
    return {
      report,
      backend_status: backendStatus(m),
      timings: {
        data_ms: t1 - t0,
        prepare_ms: t2 - t1,
        embed_ms: embedMs,
        finish_ms: t4 - t3,
        total_ms: t4 - t0,
        sentences: total,
        workers: engines ? engines.size : 1,
        gpu: onGpu,
        sentences_per_s: embedMs > 0 ? total / (embedMs / 1000) : null,
      },
    };
  } finally {
    if (ev) ev.free();
    run = null;
    finished();
  }
}

/**
 * Drives a run on the GPU: one chunk at a time through the model's own `embed_async` (a GPU
 * failure redoes the chunk on the CPU and the run goes on there; the notices say so). Returns
 * the sentences done.
 */
async function embedOnGpu(m, ev, id, total, started, checkCancel) {
  let done = 0;
  let size = GPU_CHUNK_MIN * 2; // the first chunks hold the longest sentences: start small, then measure
  let noticesShown = backendStatus(m).notices.length;
  for (;;) {
    const chunk = ev.next_chunk(size);
    if (!chunk.texts.length) break;
    const t0 = performance.now();
    const embeddings = await exclusive(() => m.embed_async(chunk.texts));
    const seconds = (performance.now() - t0) / 1000;
    done = ev.accept_embeddings(chunk.start, chunk.texts.length, embeddings);
    post({ type: 'progress', id, phase: 'evaluate', done, total, unit: 'sentences', elapsed_ms: performance.now() - started });
    const status = backendStatus(m);
    for (const message of status.notices.slice(noticesShown)) {
      post({ type: 'notice', id, level: 'warning', code: 'backend', message, backend_status: status });
    }
    noticesShown = status.notices.length;
    const perSecond = chunk.texts.length / Math.max(seconds, 1e-3);
    size = Math.max(GPU_CHUNK_MIN, Math.min(GPU_CHUNK_MAX, Math.round(perSecond * GPU_CHUNK_SECONDS)));
    checkCancel();
  }
  return done;
}

function onCancel(msg) {
  if (run && run.id === msg.target) {
    cancelRun('user');
    return { cancelled: true };
  }
  return { cancelled: false };
}

const handlers = { load: onLoad, similarity: onSimilarity, embed: onEmbed, evaluate: onEvaluate, cancel: onCancel };

self.addEventListener('message', async (e) => {
  const msg = e.data || {};
  const handler = handlers[msg.type];
  try {
    if (!handler) throw codedError(ERR.BAD_REQUEST, `Unknown request type: ${msg.type}`);
    const value = await handler(msg);
    const transfer = value && value.embeddings instanceof Float32Array ? [value.embeddings.buffer] : [];
    post({ type: 'result', id: msg.id, op: msg.type, value }, transfer);
  } catch (err) {
    let code = err && err.code ? err.code : ERR.ENGINE;
    let message = messageOf(err);
    if (err instanceof WebAssembly.RuntimeError) {
      code = ERR.ENGINE;
      message = `The engine crashed (${message}). Reload the page.`;
    }
    post({ type: 'error', id: msg.id, op: msg.type, code, message, reason: err && err.reason });
  }
});
