// transformers.js 4 (onnxruntime-web's asyncify build, WASM SIMD + threads) on the comparison
// workload: ?model=all-MiniLM-L6-v2 (the default) or all-mpnet-base-v2, ?dtype=q8 (int8, the
// default; MiniLM only) or fp32. The workload's chunks and the parity texts are those of our file
// of the same model, so both systems see the same sentences in the same order.
// Everything is local: no request leaves this origin.
import { workload, bytes, params, say, finish, fail, shuffled, paritySet, MODEL_FILE, MPNET_FILE } from './cmp-common.js';

const BATCH = 32;

async function run(extractor, chunks) {
  const embeddings = new Array(chunks.length);
  let n = 0;
  const t0 = performance.now();
  for (let k = 0; k < chunks.length; k++) {
    const texts = chunks[k].texts;
    const parts = [];
    for (let i = 0; i < texts.length; i += BATCH) {
      const t = await extractor(texts.slice(i, i + BATCH), { pooling: 'mean', normalize: true });
      parts.push(t.data);
    }
    const flat = new Float32Array(parts.reduce((a, p) => a + p.length, 0));
    let o = 0;
    for (const p of parts) { flat.set(p, o); o += p.length; }
    embeddings[k] = flat;
    n += texts.length;
    if (k % 20 === 0) say(`${n} sentences…`);
  }
  const s = (performance.now() - t0) / 1000;
  return { embeddings, seconds: s, sentences: n, sentences_per_s: n / s };
}

/**
 * The full set in a seeded random order (as a caller who does not sort by length would feed
 * it), batches of 32 each padded to its longest; embeddings are put back in chunk order.
 */
async function runShuffled(extractor, chunks) {
  const items = shuffled(chunks.flatMap((c, k) => c.texts.map((text, i) => ({ k, i, text, n: c.counts[i] }))));
  const embeddings = chunks.map(() => null);
  let padded = 0;
  const t0 = performance.now();
  for (let b = 0; b < items.length; b += BATCH) {
    const batch = items.slice(b, b + BATCH);
    padded += Math.max(...batch.map((x) => x.n)) * batch.length;
    const t = await extractor(batch.map((x) => x.text), { pooling: 'mean', normalize: true });
    const dim = t.dims[1];
    batch.forEach((x, j) => {
      if (!embeddings[x.k]) embeddings[x.k] = new Float32Array(chunks[x.k].texts.length * dim);
      embeddings[x.k].set(t.data.subarray(j * dim, (j + 1) * dim), x.i * dim);
    });
    if ((b / BATCH) % 40 === 0) say(`shuffled: ${b} sentences…`);
  }
  const s = (performance.now() - t0) / 1000;
  return { embeddings, seconds: s, sentences: items.length, sentences_per_s: items.length / s, padded_tokens: padded };
}

async function main() {
  const t0 = performance.now();
  say('cold load…');
  const { pipeline, env } = await import('./tjs/transformers.min.js');
  env.allowRemoteModels = false;
  env.allowLocalModels = true;
  // A path, not a full URL: transformers.js 4 treats a URL here as remote and skips it.
  env.localModelPath = new URL('./tjs-models/', location.href).pathname;
  env.useBrowserCache = false;
  const threads = Number(params.get('threads')) || navigator.hardwareConcurrency || 1;
  env.backends.onnx.wasm.numThreads = threads;
  const tjs = new URL('./tjs/', location.href).href;
  env.backends.onnx.wasm.wasmPaths = { mjs: `${tjs}ort-wasm-simd-threaded.asyncify.mjs`, wasm: `${tjs}ort-wasm-simd-threaded.asyncify.wasm` };
  const name = params.get('model') || 'all-MiniLM-L6-v2';
  const dtype = params.get('dtype') || 'q8';
  const ourFile = { 'all-MiniLM-L6-v2': MODEL_FILE, 'all-mpnet-base-v2': MPNET_FILE }[name];
  if (!ourFile || !['q8', 'fp32'].includes(dtype)) throw new Error(`no ${name} ${dtype} here`);
  const extractor = await pipeline('feature-extraction', name, { dtype, device: 'wasm' });
  await extractor(['warm up'], { pooling: 'mean', normalize: true });
  const loadMs = performance.now() - t0;
  say('parity…');
  const fileBytes = await bytes(ourFile);
  const set = await paritySet(fileBytes, name);
  const t = await extractor(set.texts, { pooling: 'mean', normalize: true });
  const dim = t.dims[1];
  const parity = set.check(set.texts.map((_, i) => t.data.subarray(i * dim, (i + 1) * dim)));
  say('preparing the workload…');
  const w = await workload(fileBytes);
  const sample = await run(extractor, w.sample);
  let full = null;
  let report = null;
  if (params.get('full') !== '0') {
    full = await run(extractor, w.full);
    report = w.score(full.embeddings, name, `onnx-${dtype === 'q8' ? 'int8' : 'fp32'} (transformers.js)`);
  }
  let fullShuffled = null;
  if (params.get('full') !== '0' && params.get('shuffled') !== '0' && dtype === 'q8' && name === 'all-MiniLM-L6-v2') {
    const r = await runShuffled(extractor, w.full);
    fullShuffled = { seconds: r.seconds, sentences: r.sentences, sentences_per_s: r.sentences_per_s, padded_tokens: r.padded_tokens };
  }
  const strip = (r) => r && { seconds: r.seconds, sentences: r.sentences, sentences_per_s: r.sentences_per_s };
  finish({ system: 'transformers.js', model: name, dtype, threads, load_ms: loadMs, total: w.total, sample: strip(sample), full: strip(full), full_shuffled: fullShuffled, report, parity: { onnx: parity } });
}

main().catch(fail);
