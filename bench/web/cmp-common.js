// Shared by the comparison pages (bench/compare-peers.sh): the workload, in the same
// order for both systems, and the scoring through our wasm Evaluation (one code path for metrics).
import init, { Model, Evaluation, sentence_sample, inspect_model } from './pkg/sr_bench.js';
import { compileWasm } from './engine/pool.js';

export { inspect_model };

export { SR_FILES } from './shared/protocol.js';
import { SR_FILES } from './shared/protocol.js';
export const MODEL_FILE = 'models/all-MiniLM-L6-v2.q8_0.gguf';
export const MPNET_FILE = 'models/all-mpnet-base-v2.q8_0.gguf';
/** nomic-bert (rotary positions, SwiGLU) in MiniLM's size with random weights, written by
 * llama.cpp's own converter (./build.sh fixtures): one modern file both engines read as it is. */
export const MODERN_FILE = 'llama/nomic-bert-minilm-shape.q8_0.gguf';
export const CHUNK = 64;
export const params = new URLSearchParams(location.search);

const status = document.getElementById('status');
const out = document.getElementById('results');
export const say = (text) => { status.textContent = text; };

export async function bytes(url) {
  const res = await fetch(url);
  if (!res.ok) throw new Error(`GET ${url}: HTTP ${res.status}`);
  return new Uint8Array(await res.arrayBuffer());
}

let wasmModule = null;
/** Our wasm (the site's pkg/), compiled once: the pool's helpers get the compiled module. */
export async function ourWasm() {
  if (!wasmModule) {
    wasmModule = await compileWasm(new URL('./pkg/sr_bench_bg.wasm', import.meta.url));
    await init({ module_or_path: wasmModule });
  }
  return wasmModule;
}

/**
 * The workload: `sample` (2,000 SR sentences as `sr-bench bench` picks them, sorted by token
 * count, in chunks of CHUNK) and `full` (every unique sentence of the `split`, as
 * Evaluation.next_chunk hands them out: length-sorted, longest first), plus
 * `score(embeddingsPerChunk)`. `split` "full": the SR files only (27,060 sentences); "quick":
 * as the page's quick run, with STS-B test. `modelBytes`: our file (its token counts sort).
 */
export async function workload(modelBytes, { sampleSize = 2000, split = 'full' } = {}) {
  await ourWasm();
  // One at a time: parallel requests can stall `sr-bench serve` (tiny_http, one response thread).
  const csvs = [];
  for (const f of SR_FILES) csvs.push(await bytes(`data/sr/${f}.csv`));
  const model = Model.load(modelBytes);
  const sampleTexts = sentence_sample(csvs, sampleSize)
    .map((t) => [model.token_count(t), t])
    .sort((a, b) => a[0] - b[0])
    .map(([, t]) => t);
  const sample = [];
  for (let i = 0; i < sampleTexts.length; i += CHUNK) sample.push({ start: i, texts: sampleTexts.slice(i, i + CHUNK) });
  const ev = new Evaluation(split, 'model');
  SR_FILES.forEach((f, i) => ev.add_sr_file(f, csvs[i]));
  if (split === 'quick') ev.set_stsb_test(await bytes('data/stsb/stsb-en-test.csv'));
  const total = ev.prepare(model);
  const full = [];
  for (;;) {
    const c = ev.next_chunk(CHUNK);
    if (c.texts.length === 0) break;
    full.push({ start: c.start, texts: c.texts });
  }
  let tokens = 0;
  let padded = 0;
  for (const c of full) {
    const counts = c.texts.map((t) => model.token_count(t));
    c.counts = counts;
    tokens += counts.reduce((a, b) => a + b, 0);
    for (let i = 0; i < counts.length; i += 32) {
      const b = counts.slice(i, i + 32);
      padded += Math.max(...b) * b.length;
    }
  }
  model.free();
  /** Scores the full run: `embeddings[k]` = the vectors of `full[k]` (row-major). */
  const score = (embeddings, name, dtype) => {
    full.forEach((c, k) => ev.accept_embeddings(c.start, c.texts.length, embeddings[k]));
    const report = ev.finish(name, dtype);
    ev.free();
    return toPlain(report);
  };
  return { sample, full, total, tokens, padded, score };
}

/** A seeded shuffle (mulberry32), the same on every run. */
export function shuffled(items, seed = 42) {
  let a = seed >>> 0;
  const rand = () => {
    a = (a + 0x6D2B79F5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const out = items.slice();
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

export function toPlain(v) {
  if (v instanceof Map) return Object.fromEntries([...v].map(([k, x]) => [k, toPlain(x)]));
  if (Array.isArray(v)) return v.map(toPlain);
  if (v && typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype) {
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, toPlain(x)]));
  }
  return v;
}

export function finish(result) {
  if (result.report) delete result.report.pairs;
  out.dataset.json = JSON.stringify({ userAgent: navigator.userAgent, cores: navigator.hardwareConcurrency, isolated: self.crossOriginIsolated, ...result });
  out.textContent = JSON.stringify(result, null, 1).slice(0, 4000);
  say('done');
}

export function fail(e) {
  say(`failed: ${e && e.message ? e.message : e}`);
  out.dataset.error = String((e && e.stack) || e);
}

/** Cosine of two vectors. */
export function cosine(a, b) {
  let d = 0, na = 0, nb = 0;
  for (let i = 0; i < a.length; i++) { d += a[i] * b[i]; na += a[i] * a[i]; nb += b[i] * b[i]; }
  return d / Math.sqrt(na * nb);
}

/**
 * The parity set: sentence-transformers' embeddings of the model's 82 reference texts
 * (tests/fixtures/<name>.json, copied to the site as ref/), and sr-bench's own (wasm, this model
 * file) of the same texts. The engines compared read the texts as strings, so
 * a text longer than the model's 256 tokens is cut by us at the last word that fits (one text:
 * the long paragraph): every engine then sees the same words, none truncates.
 * `reference: false`: only the texts and their limit are taken from <name>.json, for a file
 * whose weights sentence-transformers never ran (a random checkpoint): `check` then measures
 * against sr-bench alone (its vs_sentence_transformers is null).
 */
export async function paritySet(modelBytes, name = 'all-MiniLM-L6-v2', { reference: withReference = true } = {}) {
  await ourWasm();
  const ref = JSON.parse(new TextDecoder().decode(await bytes(`ref/${name}.json`)));
  const model = Model.load(modelBytes);
  const limit = ref.max_seq_length;
  // Counts past the file's own truncation (token_count counts after truncating).
  const counter = Model.load_with(modelBytes, 512, undefined);
  const count = (t) => counter.token_count(t);
  const texts = ref.items.map(({ text }) => {
    if (count(text) <= limit) return text;
    const words = text.split(' ');
    let lo = 0, hi = words.length;
    while (lo < hi) { // the most words whose text fits
      const mid = Math.ceil((lo + hi) / 2);
      if (count(words.slice(0, mid).join(' ')) <= limit) lo = mid; else hi = mid - 1;
    }
    return words.slice(0, lo).join(' ');
  });
  const flat = model.embed(texts);
  const dim = model.dim;
  model.free();
  counter.free();
  const ours = texts.map((_, i) => flat.subarray(i * dim, (i + 1) * dim));
  const reference = withReference
    ? ref.items.map((it) => (typeof it.embedding === 'string' ? JSON.parse(it.embedding) : it.embedding)) : null;
  /** min and mean cosine of `vectors` (one per text) against the reference and against ours. */
  const check = (vectors) => {
    const stats = (other) => {
      const c = vectors.map((v, i) => cosine(v, other[i]));
      return { min: Math.min(...c), mean: c.reduce((a, x) => a + x, 0) / c.length, worst: texts[c.indexOf(Math.min(...c))].slice(0, 40) };
    };
    return { texts: texts.length, vs_sentence_transformers: reference && stats(reference), vs_sr_bench: stats(ours) };
  };
  return { texts, check, cut: texts.filter((t, i) => t !== ref.items[i].text).length };
}
