// Throughput benchmark page: model load time and sentences/s per model file, in this browser.
// Driven by bench/browser.mjs (headless Chromium), which reads #results' data-json.
import init, { Model, sentence_sample } from './pkg/sr_bench.js';

const SR_FILES = ['stsb', 'sickr', 'askubuntu', 'cqa', 'twitter', 'biosses'];
const params = new URLSearchParams(location.search);
const count = Number(params.get('sentences') || 2000);
const only = params.get('models'); // comma-separated file names, default: all of the manifest

const status = document.getElementById('status');
const out = document.getElementById('results');

async function bytes(url) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`GET ${url}: ${response.status}`);
  return new Uint8Array(await response.arrayBuffer());
}

async function main() {
  await init();
  const csvs = await Promise.all(SR_FILES.map((name) => bytes(`data/sr/${name}.csv`)));
  const texts = sentence_sample(csvs, count);
  const manifest = await (await fetch('models/manifest.json')).json();
  const files = manifest.models.filter((m) => !only || only.split(',').includes(m.file));
  const results = [];
  for (const entry of files) {
    status.textContent = `${entry.file}: downloading…`;
    const data = await bytes(`models/${entry.file}`);
    status.textContent = `${entry.file}: embedding ${texts.length} sentences…`;
    let t0 = performance.now();
    const model = Model.load(data);
    const loadMs = performance.now() - t0;
    t0 = performance.now();
    model.embed(texts);
    const seconds = (performance.now() - t0) / 1000;
    model.free();
    results.push({ file: entry.file, dtype: entry.dtype, bytes: entry.bytes, load_ms: loadMs, sentences: texts.length, sentences_per_s: texts.length / seconds });
    out.textContent = results.map((r) => `${r.file.padEnd(32)} load ${r.load_ms.toFixed(0).padStart(6)} ms   ${r.sentences_per_s.toFixed(1).padStart(7)} sentences/s`).join('\n');
  }
  out.dataset.json = JSON.stringify({ userAgent: navigator.userAgent, results });
  status.textContent = 'done';
}

main().catch((e) => {
  status.textContent = `failed: ${e.message}`;
  out.dataset.error = String(e.message || e);
});
