// sr-bench on the comparison workload: a pool of Web Workers (one wasm instance + model each),
// MiniLM q8_0 (against transformers.js) and then MPNet q8_0 (the paper's model; ?mpnet=0 skips
// it), and with ?modern=1 the nomic-bert file in MiniLM's shape that wllama reads too, with the
// site's own engine modules (engine/pool.js, engine/embed-worker.js).
import { EmbedPool } from './engine/pool.js';
import { defaultPoolSize } from './shared/pool-size.js';
import {
  workload, bytes, ourWasm, params, say, finish, fail, paritySet, MODEL_FILE, MPNET_FILE, MODERN_FILE, inspect_model,
} from './cmp-common.js';

async function run(pool, chunks) {
  const embeddings = new Array(chunks.length);
  let next = 0;
  let n = 0;
  const t0 = performance.now();
  await pool.drain(
    () => (next < chunks.length ? { k: next, texts: chunks[next++].texts } : null),
    (c, e) => { embeddings[c.k] = e; n += c.texts.length; },
  );
  const s = (performance.now() - t0) / 1000;
  return { embeddings, seconds: s, sentences: n, sentences_per_s: n / s };
}

const strip = (r) => r && { seconds: r.seconds, sentences: r.sentences, sentences_per_s: r.sentences_per_s };

/** A pool for the model file at `url`, sized as the page sizes it (or ?workers=N);
 * `maxSeqLength`: its truncation (null: the file's), which the helpers' memory need follows. */
async function startPool(url, maxSeqLength = null) {
  const module = await ourWasm();
  const modelBytes = await bytes(url);
  // The helper's memory need comes from Rust, from the file's header (no model built here).
  const workerBytes = inspect_model(modelBytes.subarray(0, 16 << 20), modelBytes.length, maxSeqLength ?? undefined).worker_bytes;
  const size = Number(params.get('workers')) || defaultPoolSize(workerBytes);
  const pool = await EmbedPool.start({
    size, module, bytes: modelBytes, maxSeqLength, workerUrl: new URL('./engine/embed-worker.js', import.meta.url),
  });
  return { pool, size, modelBytes };
}

/** The pool's vectors of the model's 82 reference texts against sentence-transformers' and ours
 * (`options`: paritySet's). */
async function poolParity(pool, modelBytes, name, options) {
  const set = await paritySet(modelBytes, name, options);
  let handed = false;
  let vectors = null;
  await pool.drain(
    () => (handed ? null : ((handed = true), { texts: set.texts })),
    (c, flat) => {
      const dim = flat.length / c.texts.length;
      vectors = c.texts.map((_, i) => flat.subarray(i * dim, (i + 1) * dim));
    },
  );
  return set.check(vectors);
}

/** MPNet q8_0 on the same kind of pool: the 2,000 sample, and with ?full≠0 the full SR set and
 * the page's quick split (SR quick + STS-B test), each scored (SR averages for a sanity check). */
async function mpnet(full) {
  const t0 = performance.now();
  say('MPNet q8_0: loading…');
  const { pool, size, modelBytes } = await startPool(MPNET_FILE);
  const loadMs = performance.now() - t0;
  try {
    const parity = await poolParity(pool, modelBytes, 'all-mpnet-base-v2');
    const w = await workload(modelBytes);
    say(`MPNet sample: ${w.sample.length} chunks on ${size} workers…`);
    const sample = await run(pool, w.sample);
    if (!full) return { threads: size, load_ms: loadMs, sample: strip(sample), parity };
    say(`MPNet full: ${w.total} sentences on ${size} workers…`);
    const fullRun = await run(pool, w.full);
    const report = w.score(fullRun.embeddings, 'all-mpnet-base-v2', 'q8_0');
    const q = await workload(modelBytes, { sampleSize: 0, split: 'quick' });
    say(`MPNet quick split: ${q.total} sentences on ${size} workers…`);
    const quickRun = await run(pool, q.full);
    const quickReport = q.score(quickRun.embeddings, 'all-mpnet-base-v2', 'q8_0');
    const averages = (r) => ({ structure: r.results.structure.avg_spearman, relation: r.results.relation.avg_spearman });
    return {
      threads: size, load_ms: loadMs, sample: strip(sample), parity,
      full: { ...strip(fullRun), ...averages(report) },
      quick: { ...strip(quickRun), ...averages(quickReport), stsb_test: quickReport.stsb_test.spearman },
    };
  } finally {
    pool.terminate();
  }
}

/**
 * The nomic-bert file's truncation here: MiniLM's 256. Its own 2,048 (nomic's position table)
 * sizes each helper for 2,048-token batches (~1.4 GB), so the page's budget would start one
 * helper where wllama gets every core; no SR sentence comes near 256 tokens (the longest: 89),
 * and the parity texts are cut to 256 for every engine, so no vector changes.
 */
const MODERN_MAX_SEQ = 256;

/**
 * The nomic-bert file in MiniLM's shape (random weights; ?modern=1) on the same kind of pool: cold
 * load, the 2,000 sample and with ?full≠0 the full SR set, timed only (a random model's scores
 * mean nothing). Parity: MiniLM's 82 texts (the file has MiniLM's vocabulary), the pool's vectors
 * against one wasm instance's, as wllama's are measured: there is no sentence-transformers run of
 * these weights. Loaded truncating at MODERN_MAX_SEQ tokens (above).
 */
async function modern(full) {
  const t0 = performance.now();
  say('nomic-bert (MiniLM\'s shape) q8_0: loading…');
  const { pool, size, modelBytes } = await startPool(MODERN_FILE, MODERN_MAX_SEQ);
  const loadMs = performance.now() - t0;
  try {
    const parity = await poolParity(pool, modelBytes, 'all-MiniLM-L6-v2', { reference: false });
    const w = await workload(modelBytes);
    say(`nomic-bert sample: ${w.sample.length} chunks on ${size} workers…`);
    const sample = await run(pool, w.sample);
    let fullRun = null;
    if (full) {
      say(`nomic-bert full: ${w.total} sentences on ${size} workers…`);
      fullRun = await run(pool, w.full);
    }
    return {
      threads: size, max_seq_length: MODERN_MAX_SEQ, load_ms: loadMs, total: w.total, sample: strip(sample), full: strip(fullRun), parity,
    };
  } finally {
    pool.terminate();
  }
}

async function main() {
  const t0 = performance.now();
  say('cold load…');
  const { pool, size, modelBytes } = await startPool(MODEL_FILE);
  const loadMs = performance.now() - t0;
  say('parity…');
  const parity = await poolParity(pool, modelBytes, 'all-MiniLM-L6-v2');
  say('preparing the workload…');
  const w = await workload(modelBytes);
  say(`sample: ${w.sample.length} chunks on ${size} workers…`);
  const sample = await run(pool, w.sample);
  const full = params.get('full') !== '0';
  let fullRun = null;
  let report = null;
  if (full) {
    say(`full: ${w.total} sentences on ${size} workers…`);
    fullRun = await run(pool, w.full);
    report = w.score(fullRun.embeddings, 'all-MiniLM-L6-v2', 'q8_0');
  }
  pool.terminate();
  const mpnetResult = params.get('mpnet') === '0' ? null : await mpnet(full);
  const modernResult = params.get('modern') === '1' ? await modern(full) : null;
  finish({
    system: 'sr-bench', threads: size, load_ms: loadMs, pool_load_ms: pool.loadMs, total: w.total,
    tokens: w.tokens, padded_tokens: w.padded, sample: strip(sample), full: strip(fullRun), report, mpnet: mpnetResult,
    modern: modernResult, parity: { ours_file: parity },
  });
}

main().catch(fail);
