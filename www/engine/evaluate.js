// @ts-check
// The engine's `evaluate` request: one driver (fetch the data, plan the run with Evaluation,
// embed, finish the report) and three strategies for the embedding step:
//   helper pool      a CPU model: chunks go to the pool's helpers (pool.js), this worker books them in
//   GPU              a model on WebGPU (Model.is_async): this worker embeds chunks with embed_async
//   single instance  the baseline, one worker, or no pool: Evaluation.step here, chunk by chunk

import { Evaluation, pairs_csv } from '../pkg/sr_bench.js';
import { ERR, SR_FILES, EVAL_CHUNK, DATA_PATHS, CZECH_PATH, MAX_PAIRS_BYTES } from '../shared/protocol.js';
import { codedError, messageOf } from '../shared/errors.js';
import { EmbedPool, POOL_CHUNK, POOL_TOKENS } from './pool.js';
import { defaultPoolSize } from '../shared/pool-size.js';
import { backendStatus, dropPool, exclusive, post, requireModel, toPlain, yieldToEvents } from './engine-state.js';

/** A GPU run hands out chunks sized to take about this long, so cancel and a playground
 * request (which waits for the GPU) are answered quickly even on a slow software adapter. */
const GPU_CHUNK_SECONDS = 1;
const GPU_CHUNK_MIN = 4;
/** Room for two full batches in flight on a hardware GPU (up to 256 sentences each, see
 * docs/gpu.md); the time target above keeps a slow adapter's chunks small. */
const GPU_CHUNK_MAX = 512;
/** Most helpers a request may ask for. */
const MAX_REQUESTED_WORKERS = 16;

/** The benchmark's data files: the six SR files, then the STS-B test (also the probes' input). */

async function fetchData(engine, path, baseUrl) {
  if (engine.dataFiles.has(path)) return engine.dataFiles.get(path);
  let res;
  try {
    res = await fetch(new URL(path, baseUrl).href);
  } catch (e) {
    throw codedError(ERR.NETWORK, `Could not download ${path}: ${messageOf(e)}`);
  }
  if (!res.ok) throw codedError(ERR.NETWORK, `Could not download ${path}: HTTP ${res.status}`);
  const bytes = new Uint8Array(await res.arrayBuffer());
  engine.dataFiles.set(path, bytes);
  return bytes;
}

/**
 * The pool for the loaded model, started on first use and kept for later runs. `workers`:
 * the requested size (0 = one per core, capped by memory; 1 = no pool). Resolves to null when
 * no pool is to be used.
 */
function getPool(engine, workers, onStart) {
  const { model, bytes, wasmModule, entry } = engine;
  if (!model || !bytes || !wasmModule || model.backend !== 'cpu') return Promise.resolve(null);
  const size = workers > 0 ? Math.min(workers, MAX_REQUESTED_WORKERS) : defaultPoolSize(model.estimate_worker_bytes());
  if (size < 2 || typeof Worker === 'undefined') return Promise.resolve(null);
  const maxSeqLength = engine.maxSeqLength;
  const prefix = engine.info ? engine.info.prefix : '';
  const key = `${entry.sha256}/${maxSeqLength}/${JSON.stringify(prefix)}/${size}`;
  if (!engine.pool || engine.pool.key !== key) {
    dropPool(engine);
    onStart(size);
    const ready = EmbedPool.start({
      size, module: wasmModule, bytes, maxSeqLength, prefix, workerUrl: new URL('./embed-worker.js', import.meta.url),
    });
    engine.pool = { key, size, ready };
    ready.catch(() => { if (engine.pool && engine.pool.ready === ready) engine.pool = null; });
  }
  return engine.pool.ready;
}

// ---------------------------------------------------------------- strategies
// Each `embed(run)` embeds every sentence of `run.ev`, reporting with `run.report(done)`, and
// returns the embedding phase's milliseconds. `run`: {ev, model, report, checkCancel, cancelled, notice}.
// `notice(code, message, backend_status?)` posts a warning notice for the run's request.

/** Helpers embed length-sorted chunks (longest first); this worker only books them in, so it
 * stays free for similarity requests and cancel. */
function poolStrategy(engine, pool) {
  return {
    workers: pool.size,
    gpu: false,
    async embed(run) {
      const t0 = performance.now();
      try {
        await pool.drain(
          () => run.ev.next_chunk_within(POOL_CHUNK, POOL_TOKENS),
          (chunk, embeddings) => run.report(run.ev.accept_embeddings(chunk.start, chunk.texts.length, embeddings)),
          run.cancelled,
          (message) => run.notice('helper-replaced', message),
        );
      } catch (e) {
        dropPool(engine);
        throw codedError(e.code || ERR.ENGINE, `An engine helper failed: ${messageOf(e)}`);
      }
      return performance.now() - t0;
    },
  };
}

/** One chunk at a time through the model's own `embed_async` (a GPU failure redoes the chunk on
 * the CPU and the run goes on there; each new backend notice is passed on as it happens). */
function gpuStrategy(engine) {
  return {
    workers: 1,
    gpu: true,
    async embed(run) {
      const t0 = performance.now();
      let size = GPU_CHUNK_MIN * 2; // the first chunks hold the longest sentences: start small, then measure
      let noticesShown = backendStatus(run.model).notices.length;
      for (;;) {
        const chunk = run.ev.next_chunk(size);
        if (!chunk.texts.length) break;
        const c0 = performance.now();
        const embeddings = await exclusive(engine, () => run.model.embed_async(chunk.texts));
        const seconds = (performance.now() - c0) / 1000;
        run.report(run.ev.accept_embeddings(chunk.start, chunk.texts.length, embeddings));
        const status = backendStatus(run.model);
        for (const message of status.notices.slice(noticesShown)) run.notice('backend', message, status);
        noticesShown = status.notices.length;
        const perSecond = chunk.texts.length / Math.max(seconds, 1e-3);
        size = Math.max(GPU_CHUNK_MIN, Math.min(GPU_CHUNK_MAX, Math.round(perSecond * GPU_CHUNK_SECONDS)));
        run.checkCancel();
      }
      return performance.now() - t0;
    },
  };
}

/** Evaluation.step in this worker, EVAL_CHUNK sentences at a time, letting messages in between. */
function singleStrategy() {
  return {
    workers: 1,
    gpu: false,
    async embed(run) {
      let ms = 0;
      while (!run.ev.is_done()) {
        const s = performance.now();
        const done = run.ev.step(run.model, EVAL_CHUNK);
        ms += performance.now() - s;
        run.report(done);
        await yieldToEvents(); // lets cancel / similarity / load messages in
        run.checkCancel();
      }
      return ms;
    },
  };
}

async function chooseStrategy(engine, msg, model, encoder, progress) {
  if (encoder !== 'model') return singleStrategy();
  if (model.is_async()) return gpuStrategy(engine);
  try {
    const pool = await getPool(engine, Number(msg.workers) || 0, (size) => progress('prepare', 0, size, 'workers', 0));
    if (pool) return poolStrategy(engine, pool);
  } catch (e) {
    // No pool (e.g. nested workers unavailable): embed here, one thread.
    post({ type: 'notice', id: msg.id, level: 'info', code: 'pool-unavailable', message: `Running on one thread: ${messageOf(e)}` });
  }
  return singleStrategy();
}

// ---------------------------------------------------------------- the driver

/**
 * Registers request `msg` as the engine's one run (a benchmark or a probe: `cancel` stops
 * either). `end()` must be called when it stops.
 */
export function beginRun(engine, msg, what) {
  if (engine.run) throw codedError(ERR.BUSY, 'A benchmark is already running: cancel it first.');
  let finished;
  const me = { id: msg.id, cancelled: false, reason: '', done: new Promise((r) => { finished = r; }) };
  engine.run = me;
  return {
    me,
    progress: (phase, done, total, unit, elapsed_ms) =>
      post({ type: 'progress', id: msg.id, phase, done, total, unit, elapsed_ms }),
    checkCancel: () => {
      if (me.cancelled) {
        const why = me.reason === 'model-changed' ? 'the model was changed' : 'you cancelled it';
        throw codedError(ERR.CANCELLED, `${what} cancelled: ${why}.`, me.reason);
      }
    },
    end: () => {
      engine.run = null;
      finished();
    },
  };
}

/** The benchmark's data files (`paths`, by default all of DATA_PATHS, in that order), each
 * fetched once per engine, with progress. */
export async function fetchAllData(engine, baseUrl, { progress, checkCancel }, paths = DATA_PATHS) {
  const t0 = performance.now();
  const bytes = [];
  for (let i = 0; i < paths.length; i++) {
    progress('data', i, paths.length, 'files', performance.now() - t0);
    bytes.push(await fetchData(engine, paths[i], baseUrl));
    checkCancel();
  }
  progress('data', paths.length, paths.length, 'files', performance.now() - t0);
  return bytes;
}

/** A user's own pairs file, read here (it never leaves the tab); a file past MAX_PAIRS_BYTES is
 * refused before it is read. @param {File} file */
async function readOwnPairs(file) {
  if (file.size > MAX_PAIRS_BYTES) {
    throw codedError(ERR.DATA, `'${file.name}' is ${(file.size / 1e6).toFixed(1)} MB; a pairs file may be at most ` +
      `${MAX_PAIRS_BYTES >> 20} MB (10000 pairs)`);
  }
  try {
    return new Uint8Array(await file.arrayBuffer());
  } catch (e) {
    throw codedError(ERR.DATA, `'${file.name}' could not be read: ${messageOf(e)}`);
  }
}

/** The SR files a request names (all six when it names none), in SR_FILES order; an unknown
 * name, or no file where nothing else is asked for, is a bad request (the page never sends one). */
function chosenFiles(msg) {
  if (msg.files === undefined) return [...SR_FILES];
  const alone = msg.czech === true || msg.stsb_test !== false; // SR may be left out then
  if (!Array.isArray(msg.files) || (!msg.files.length && !alone) || msg.files.some((f) => !SR_FILES.includes(f))) {
    throw codedError(ERR.BAD_REQUEST, `files: expected some of ${SR_FILES.join(', ')}, got ${JSON.stringify(msg.files)}`);
  }
  return SR_FILES.filter((f) => msg.files.includes(f));
}

/** The syntax-blind baseline's Czech News STS section (as `sr-bench eval-czech --baseline static`). */
function czechBaselineOf(model, tsv) {
  const ev = new Evaluation('full', 'static');
  try {
    ev.set_czech_news_sts(tsv);
    ev.prepare(model);
    while (!ev.is_done()) ev.step(model, 4096);
    return toPlain(ev.finish('', '', undefined)).czech_news_sts;
  } finally {
    ev.free();
  }
}

/** @returns {Promise<import('../shared/protocol.js').EvaluateResult>} */
export async function evaluate(engine, msg) {
  const model = requireModel(engine);
  const run = beginRun(engine, msg, 'Benchmark');
  const { me, progress, checkCancel } = run;
  const info = engine.info;
  const encoder = msg.encoder || 'model';
  let ev = null;
  try {
    const t0 = performance.now();
    // Some SR files only, and STS-B test or not (the benchmark panel's Data choice).
    const own = msg.own || null;
    const files = own ? [] : chosenFiles(msg);
    const stsbTest = !own && msg.stsb_test !== false;
    const czech = !own && msg.czech === true;
    const ownBytes = own ? await readOwnPairs(own) : null;
    const paths = [...files.map((f) => DATA_PATHS[SR_FILES.indexOf(f)]), ...(stsbTest ? [DATA_PATHS[SR_FILES.length]] : []),
      ...(czech ? [CZECH_PATH] : [])];
    const bytes = await fetchAllData(engine, msg.baseUrl, run, paths);
    const t1 = performance.now();
    ev = new Evaluation(msg.split, encoder); // a malformed file throws with code "data"
    files.forEach((f, i) => ev.add_sr_file(f, bytes[i]));
    if (stsbTest) ev.set_stsb_test(bytes[files.length]);
    if (czech) ev.set_czech_news_sts(bytes[paths.length - 1]);
    if (own) ev.set_own_pairs(own.name, ownBytes);
    const total = ev.prepare(model);
    const strategy = await chooseStrategy(engine, msg, model, encoder, progress);
    checkCancel();
    const t2 = performance.now();
    progress('evaluate', 0, total, 'sentences', 0);
    const embedMs = await strategy.embed({
      ev,
      model,
      report: (done) => progress('evaluate', done, total, 'sentences', performance.now() - t2),
      checkCancel,
      cancelled: () => me.cancelled,
      notice: (code, message, status) =>
        post({ type: 'notice', id: msg.id, level: 'warning', code, message, backend_status: status }),
    });
    checkCancel();
    const t3 = performance.now();
    const flops = ev.forward_flops(model);
    const report = toPlain(ev.finish(info.name, info.dtype, info.prefix));
    const csv = pairs_csv(report);
    // Czech News STS compares the model with the syntax-blind baseline too: the baseline's pass
    // reads the static token table only (no layer), a second or so for the 2,400 texts.
    const czechBaseline = czech && encoder === 'model' ? czechBaselineOf(model, bytes[paths.length - 1]) : null;
    const t4 = performance.now();
    return {
      report,
      czech_baseline: czechBaseline,
      pairs_csv: csv,
      backend_status: backendStatus(model),
      timings: {
        data_ms: t1 - t0,
        prepare_ms: t2 - t1,
        embed_ms: embedMs,
        finish_ms: t4 - t3,
        total_ms: t4 - t0,
        sentences: total,
        workers: strategy.workers,
        gpu: strategy.gpu,
        sentences_per_s: embedMs > 0 ? total / (embedMs / 1000) : null,
        flops,
        gflop_per_s: embedMs > 0 && flops > 0 ? flops / (embedMs / 1000) / 1e9 : null,
        // The CPU's figure per thread that embedded; none for the GPU (one device, no cores).
        gflop_per_s_per_core: embedMs > 0 && flops > 0 && !strategy.gpu
          ? flops / (embedMs / 1000) / 1e9 / strategy.workers : null,
      },
    };
  } finally {
    if (ev) ev.free();
    run.end();
  }
}
