// sr-bench on the comparison workload: a pool of Web Workers (one wasm instance + model each).
import { EmbedPool, defaultPoolSize } from './pool.js';
import { workload, bytes, ourWasm, params, say, finish, fail, MODEL_FILE, inspect_model } from './cmp-common.js';

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

async function main() {
  const t0 = performance.now();
  say('cold load…');
  const module = await ourWasm();
  const modelBytes = await bytes(MODEL_FILE);
  // The helper's memory need comes from Rust, from the file's header (no model built here).
  const workerBytes = inspect_model(modelBytes.subarray(0, 16 << 20), modelBytes.length).worker_bytes;
  const size = Number(params.get('workers')) || defaultPoolSize(workerBytes);
  const pool = await EmbedPool.start({ size, module, bytes: modelBytes, workerUrl: new URL('./embed-worker.js', import.meta.url) });
  const loadMs = performance.now() - t0;
  say('preparing the workload…');
  const w = await workload(modelBytes);
  say(`sample: ${w.sample.length} chunks on ${size} workers…`);
  const sample = await run(pool, w.sample);
  let full = null;
  let report = null;
  if (params.get('full') !== '0') {
    say(`full: ${w.total} sentences on ${size} workers…`);
    full = await run(pool, w.full);
    report = w.score(full.embeddings, 'all-MiniLM-L6-v2', 'q8_0');
  }
  pool.terminate();
  const strip = (r) => r && { seconds: r.seconds, sentences: r.sentences, sentences_per_s: r.sentences_per_s };
  finish({ system: 'sr-bench', threads: size, load_ms: loadMs, pool_load_ms: pool.loadMs, total: w.total, tokens: w.tokens, padded_tokens: w.padded, sample: strip(sample), full: strip(full), report });
}

main().catch(fail);
