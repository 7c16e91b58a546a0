// @ts-check
// The engine worker (module worker): owns the wasm module, the loaded model and the benchmark run.
// Message protocol: see protocol.js; requests are answered through rpc.js's `serve`.

import init, { Model, reverse_words, shuffle_words, swap_words } from '../pkg/sr_bench.js';
import { ERR, REQ } from '../shared/protocol.js';
import { codedError, describeError, messageOf } from '../shared/errors.js';
import { serve } from '../shared/rpc.js';
import { loadModelBytes } from './cache.js';
import { inspectFile, readLocalFile } from './local-file.js';
import { compileWasm, exposeWasmMemory } from './pool.js';
import { evaluate } from './evaluate.js';
import { probe } from './probe.js';
import { quiz } from './quiz.js';
import {
  backendStatus, cancelRun, createEngineState, dropPool, exclusive, post, requireModel, toPlain, yieldToEvents,
} from './engine-state.js';

const engine = createEngineState();

/** The engine's wasm: compiled once here, and the compiled module handed to the pool's helpers. */
const WASM_URL = new URL('../pkg/sr_bench_bg.wasm', import.meta.url);

function ensureWasm() {
  if (!engine.wasmReady) {
    engine.wasmReady = compileWasm(WASM_URL)
      .then((module) => {
        engine.wasmModule = module;
        return init({ module_or_path: module });
      })
      .then(exposeWasmMemory)
      .catch((e) => {
        engine.wasmReady = null;
        throw codedError(ERR.ENGINE, `The WebAssembly engine could not start: ${messageOf(e)}`);
      });
  }
  return engine.wasmReady;
}

/**
 * The model for the page's backend choice: "cpu" → `Model.load_with`; "webgpu"/"auto" →
 * `Model.load_with_backend(bytes, backend, true, maxSeqLength)`, where Rust falls back to the CPU by itself
 * (no adapter, a refused device, an architecture the GPU kernels lack) and
 * `backend_status()` says why. `maxSeqLength`: null keeps the file's. Errors keep the wasm API's `code`.
 */
async function loadForBackend(bytes, backend, file, maxSeqLength) {
  const msl = maxSeqLength ?? undefined;
  try {
    if (backend === 'webgpu' || backend === 'auto') return await Model.load_with_backend(bytes, backend, true, msl);
    return Model.load_with(bytes, msl);
  } catch (e) {
    const { code, message } = describeError(e);
    throw codedError(code, `${file} could not be loaded: ${message}`);
  }
}

const superseded = () => codedError(ERR.SUPERSEDED, 'Another model was chosen.');

async function onLoad(msg) {
  const seq = ++engine.loadSeq;
  if (engine.loadAbort) engine.loadAbort.abort();
  const abort = new AbortController();
  engine.loadAbort = abort;
  if (engine.run) {
    cancelRun(engine, 'model-changed');
    await engine.run.done;
  }
  const isSuperseded = () => seq !== engine.loadSeq;
  const started = performance.now();
  const phaseStart = {};
  const onProgress = (phase, done, total, unit) => {
    if (isSuperseded()) return;
    phaseStart[phase] ??= performance.now();
    post({ type: 'progress', id: msg.id, phase, done, total, unit, elapsed_ms: performance.now() - phaseStart[phase] });
  };
  const onNotice = (level, code, message) => post({ type: 'notice', id: msg.id, level, code, message });

  await ensureWasm();
  /** The model's bytes; `sha256` only for a file from this computer (local-file.js).
   * @type {{bytes: Uint8Array, sha256?: string, source: string, fetch_ms: number, verify_ms: number}} */
  let got;
  try {
    got = msg.file
      ? await readLocalFile(msg.file, msg.sha256, onProgress)
      : await loadModelBytes(msg.model, msg.baseUrl, { onProgress, onNotice, signal: abort.signal });
  } catch (e) {
    if (isSuperseded() || (e && e.name === 'AbortError')) throw superseded();
    throw e;
  }
  if (isSuperseded()) throw superseded();
  onProgress('init', 0, 1, 'steps');
  await yieldToEvents();
  const t0 = performance.now();
  const maxSeqLength = msg.file ? (msg.max_seq_length ?? null) : null;
  const next = await loadForBackend(got.bytes, msg.backend || 'cpu', msg.file ? msg.file.name : msg.model.file, maxSeqLength);
  const info = toPlain(next.info());
  // A local file gets an entry like the manifest's, marked `local`.
  const entry = msg.file
    ? { name: info.name, dtype: info.dtype, file: msg.file.name, bytes: got.bytes.length, sha256: got.sha256, local: true }
    : msg.model;
  const init_ms = performance.now() - t0;
  if (isSuperseded()) {
    next.free();
    throw superseded();
  }
  if (engine.run) { // a run started on the old model while this one was downloading
    cancelRun(engine, 'model-changed');
    await engine.run.done;
  }
  const old = engine.model;
  engine.model = next;
  engine.info = info;
  if (old) exclusive(engine, () => old.free()); // after any similarity still in flight on it
  engine.bytes = got.bytes;
  engine.entry = entry;
  engine.maxSeqLength = maxSeqLength;
  dropPool(engine);
  if (engine.loadAbort === abort) engine.loadAbort = null;
  return {
    info,
    backend: next.backend,
    backend_status: backendStatus(next),
    entry,
    max_seq_length: maxSeqLength,
    source: got.source,
    timings: { fetch_ms: got.fetch_ms, verify_ms: got.verify_ms, init_ms, total_ms: performance.now() - started },
  };
}

function similarityOf(m, a, b, cosine, t0) {
  const static_cosine = m.static_similarity(a, b); // the word table only: always on the CPU
  const ms = performance.now() - t0;
  // Tokens after truncation (special tokens included): equal to max_seq_length means cut off.
  const tokens = [m.token_count(a), m.token_count(b)];
  return { cosine, static_cosine, ms, tokens, backend_status: backendStatus(m) };
}

function onSimilarity(msg) {
  const m = requireModel(engine);
  const a = String(msg.a);
  const b = String(msg.b);
  if (!m.is_async()) {
    const t0 = performance.now();
    return similarityOf(m, a, b, m.similarity(a, b), t0);
  }
  // The GPU is reached only asynchronously; the timer starts when the GPU is ours (a run's chunk may be ahead).
  return exclusive(engine, async () => {
    const t0 = performance.now();
    return similarityOf(m, a, b, await m.similarity_async(a, b), t0);
  });
}

function onEmbed(msg) {
  const m = requireModel(engine);
  const texts = msg.texts.map(String);
  if (m.is_async()) return exclusive(engine, async () => ({ embeddings: await m.embed_async(texts), dim: m.dim }));
  return { embeddings: m.embed(texts), dim: m.dim };
}

/** The text the model puts before every input (the page's prefix field; "" for none). Refused
 * while a run is going: a report's texts must all have been read the same way. */
function onSetPrefix(msg) {
  const m = requireModel(engine);
  if (engine.run) throw codedError(ERR.BUSY, 'A benchmark is running: change the prefix when it has finished, or cancel it.');
  return exclusive(engine, () => {
    try {
      m.set_prefix(String(msg.prefix));
    } catch (e) {
      const { code, message } = describeError(e);
      throw codedError(code, message);
    }
    engine.info = toPlain(m.info());
    dropPool(engine); // the helpers' models read the old prefix
    return { info: engine.info };
  });
}

function onCancel(msg) {
  if (engine.run && engine.run.id === msg.target) {
    cancelRun(engine, 'user');
    return { cancelled: true };
  }
  return { cancelled: false };
}

// ---- The playground's explainers: token-pair maps, per-layer cosines, word order.
// All numbers and word edits come from Rust; these handlers only call it.

/** A layer-by-layer reference: B's words shuffled with this seed when no seed was chosen. */
const LAYER_SHUFFLE_SEED = 0;

function onExplain(msg) {
  const m = requireModel(engine);
  const a = String(msg.a);
  const b = String(msg.b);
  const t0 = performance.now();
  const seed = msg.shuffle_seed ?? LAYER_SHUFFLE_SEED;
  const shuffledB = shuffle_words(b, seed);
  // Token states are computed on the CPU even for a WebGPU model (Rust's explain).
  return {
    model: m.explain(a, b),
    baseline: m.explain_static(a, b),
    layers: Array.from(m.layer_cosines(a, b)),
    layers_shuffled: Array.from(m.layer_cosines(a, shuffledB)),
    shuffled_b: shuffledB,
    shuffle_seed: seed,
    ms: performance.now() - t0,
  };
}

async function onWordOrder(msg) {
  await ensureWasm(); // word edits need no model
  const text = String(msg.text);
  if (msg.op === 'shuffle') return { text: shuffle_words(text, msg.seed) };
  if (msg.op === 'reverse') return { text: reverse_words(text) };
  if (msg.op === 'swap') return { text: swap_words(text, msg.i, msg.j) };
  throw codedError(ERR.BAD_REQUEST, `Unknown word-order operation: ${msg.op}`);
}

function onShuffleScores(msg) {
  const m = requireModel(engine);
  const text = String(msg.text);
  const texts = msg.seeds.map((seed) => shuffle_words(text, seed));
  if (!m.is_async()) return { texts, cosines: texts.map((t) => m.similarity(text, t)) };
  return exclusive(engine, async () => {
    const cosines = [];
    for (const t of texts) cosines.push(await m.similarity_async(text, t));
    return { texts, cosines };
  });
}

serve(self, {
  [REQ.EXPLAIN]: onExplain,
  [REQ.WORD_ORDER]: onWordOrder,
  [REQ.SHUFFLE_SCORES]: onShuffleScores,
  [REQ.LOAD]: onLoad,
  [REQ.INSPECT_FILE]: async (msg) => {
    await ensureWasm();
    return inspectFile(msg);
  },
  [REQ.SIMILARITY]: onSimilarity,
  [REQ.EMBED]: onEmbed,
  [REQ.EVALUATE]: (msg) => evaluate(engine, msg),
  [REQ.PROBE]: (msg) => probe(engine, msg), // word-order and layer probes (probe.js)
  [REQ.CANCEL]: onCancel,
  [REQ.SET_PREFIX]: onSetPrefix,
  [REQ.QUIZ]: async (msg) => {
    await ensureWasm(); // the questions need no model; the answers do
    return quiz(engine, msg);
  },
  // The page's liveness check (page/engine.js): answered at once, so only a dead or stuck
  // worker leaves it unanswered.
  [REQ.PING]: () => ({}),
});
