// wllama (llama.cpp's own kernels in wasm, multi-thread build) on the comparison workload: our
// MiniLM q8_0 file, which carries llama.cpp's keys and tensor names (format version 2), in
// embedding mode with mean pooling; the parity set on our file and on llama.cpp's converter's
// (?llama=0 skips that); with ?modern=1 also the nomic-bert file in MiniLM's shape (random
// weights, llama.cpp's converter) that sr-bench's page runs too. Everything is local: no request
// leaves this origin. Served without the site's CSP (wllama starts its worker from a blob: URL) by
// bench/serve-static.mjs.
import { workload, bytes, params, say, finish, fail, paritySet, MODEL_FILE, MODERN_FILE } from './cmp-common.js';

const LLAMA_FILE = 'llama/all-MiniLM-L6-v2.llamacpp.q8_0.gguf';
const F32_FILE = 'models/all-MiniLM-L6-v2.f32.gguf';

/** A wllama instance with `url` loaded for embeddings, all cores, a 512-token context. */
async function load(Wllama, url, threads) {
  const wasm = new URL('./wllama/wasm/wllama.wasm', location.href).href;
  const w = new Wllama({ 'wllama.wasm': wasm, default: wasm }, { suppressNativeLog: true });
  await w.loadModelFromUrl(new URL(url, location.href).href, {
    embeddings: true, pooling_type: 'mean', n_ctx: 512, n_batch: 512, n_ubatch: 512, n_threads: threads, useCache: false,
  });
  return w;
}

/** The vectors of `texts`, one call per `texts` (wllama 3.13 returns one vector per input). */
async function embed(w, texts) {
  const r = await w.createEmbedding({ input: texts });
  if (r.data.length !== texts.length) throw new Error(`wllama returned ${r.data.length} vectors for ${texts.length} texts`);
  return r.data.sort((a, b) => a.index - b.index).map((d) => d.embedding);
}

async function run(w, chunks) {
  const embeddings = new Array(chunks.length);
  let n = 0;
  const t0 = performance.now();
  for (let k = 0; k < chunks.length; k++) {
    const vectors = await embed(w, chunks[k].texts);
    const flat = new Float32Array(vectors.length * vectors[0].length);
    vectors.forEach((v, i) => flat.set(v, i * v.length));
    embeddings[k] = flat;
    n += vectors.length;
    if (k % 20 === 0) say(`${n} sentences…`);
  }
  const s = (performance.now() - t0) / 1000;
  return { embeddings, seconds: s, sentences: n, sentences_per_s: n / s };
}

const strip = (r) => r && { seconds: r.seconds, sentences: r.sentences, sentences_per_s: r.sentences_per_s };

/**
 * The nomic-bert file in MiniLM's shape (?modern=1), loaded as MiniLM is: cold load (to the first
 * vector), the 2,000 sample and with ?full≠0 the full SR set, timed only (random weights: scores
 * mean nothing), in the chunks sr-bench's page runs. Parity: MiniLM's 82 texts against sr-bench's
 * vectors of the same file (no sentence-transformers run of these weights exists). llama.cpp's
 * q8_0 kernels quantize the activations to 8 bits too, and a random model's vectors move more
 * under that than a trained one's: the figure is reported, not held to a bound.
 */
async function modern(Wllama, threads, full) {
  const t0 = performance.now();
  say('nomic-bert (MiniLM\'s shape) q8_0: loading…');
  const w = await load(Wllama, MODERN_FILE, threads);
  try {
    await embed(w, ['warm up']);
    const loadMs = performance.now() - t0;
    const modelBytes = await bytes(MODERN_FILE);
    const set = await paritySet(modelBytes, 'all-MiniLM-L6-v2', { reference: false });
    const parity = set.check(await embed(w, set.texts));
    const wl = await workload(modelBytes);
    say('nomic-bert sample…');
    const sample = await run(w, wl.sample);
    const fullRun = full ? await run(w, wl.full) : null;
    return { threads: w.getNumThreads(), load_ms: loadMs, total: wl.total, sample: strip(sample), full: strip(fullRun), parity };
  } finally {
    await w.exit();
  }
}

async function main() {
  const threads = Number(params.get('threads')) || navigator.hardwareConcurrency || 1;
  const t0 = performance.now();
  say('cold load…');
  const { Wllama } = await import('./wllama/index.js');
  const w = await load(Wllama, MODEL_FILE, threads);
  await embed(w, ['warm up']);
  const loadMs = performance.now() - t0;
  const modelBytes = await bytes(MODEL_FILE);
  say('parity…');
  const parity = await paritySet(modelBytes);
  const ours = parity.check(await embed(w, parity.texts));
  // Our f32 file against sr-bench's f32: the two engines' arithmetic without llama.cpp's q8_0
  // kernels, which quantize the activations too.
  const f32Set = await paritySet(await bytes(F32_FILE));
  const w32 = await load(Wllama, F32_FILE, threads);
  const f32 = f32Set.check(await embed(w32, f32Set.texts));
  await w32.exit();
  let llama = null;
  if (params.get('llama') !== '0') {
    const other = await load(Wllama, LLAMA_FILE, threads);
    const vectors = await embed(other, parity.texts);
    llama = parity.check(vectors);
    await other.exit();
  }
  say('preparing the workload…');
  const wl = await workload(modelBytes);
  const sample = await run(w, wl.sample);
  let full = null;
  let report = null;
  if (params.get('full') !== '0') {
    full = await run(w, wl.full);
    report = wl.score(full.embeddings, 'all-MiniLM-L6-v2', 'q8_0 (wllama)');
  }
  const result = {
    system: 'wllama', version: Wllama.getLibllamaVersion(), threads: w.getNumThreads(), multithread: w.isMultithread(),
    load_ms: loadMs, total: wl.total, sample: strip(sample), full: strip(full), report,
    parity: { ours_file: ours, ours_f32_file: f32, llama_cpp_file: llama, cut_texts: parity.cut },
  };
  // MiniLM's instance goes first: one model's memory and threads at a time, as on sr-bench's page.
  await w.exit();
  result.modern = params.get('modern') === '1' ? await modern(Wllama, threads, params.get('full') !== '0') : null;
  finish(result);
}

main().catch(fail);
