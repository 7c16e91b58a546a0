// Throughput benchmark page: model load time, sentences/s and GFLOP/s per model file and backend,
// in this browser. Driven by bench/browser.mjs (headless Chromium), which reads #results' data-json.
// Not part of the shipped site: bench/site.sh puts it at the root of the benchmark site
// (bench/out/site), next to the site's own page/, engine/ and shared/ modules.
//   ?sentences=2000            SR sentences embedded per model file
//   &models=a.gguf,b.gguf      manifest files to measure (default: all)
//   &backends=cpu,webgpu       "cpu": Model.load + embed (wasm, one thread); "webgpu" (or its
//                              alias "gpu", which bench/browser.mjs passes):
//                              Model.load_with_backend(bytes, "webgpu") + await embed_async
import init, { Model, sentence_sample } from './pkg/sr_bench.js';
import { SR_FILES } from './shared/protocol.js';
import { adapterLabel } from './page/adapter-label.js';
import { messageOf } from './shared/errors.js';

const BACKENDS = ['cpu', 'webgpu', 'gpu'];
const params = new URLSearchParams(location.search);
const count = Number(params.get('sentences') || 2000);
const only = params.get('models'); // comma-separated file names, default: all of the manifest
const backends = (params.get('backends') || 'cpu').split(',').map((b) => b.trim()).filter(Boolean);

const status = document.getElementById('status');
const out = document.getElementById('results');

async function bytes(url) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`GET ${url}: ${response.status}`);
  return new Uint8Array(await response.arrayBuffer());
}

/** The adapter as the result rows carry it: null on the CPU; `software` marks CPU emulation
 * (SwiftShader, `isFallbackAdapter`), whose figures say nothing about a real GPU. */
function adapterOf(model) {
  const s = model.backend_status(); // plain JSON objects, browser_info filled by Rust
  const a = s.adapter;
  if (!a) return null;
  return {
    name: adapterLabel(a), backend: a.backend, device_type: a.device_type, driver: a.driver,
    software: !!s.software_adapter, wgpu_name: a.name, browser_info: a.browser_info || null,
    features: a.features || [], features_used: a.features_used || [],
  };
}

/** Loads and times one model file on one backend; returns a result row, or a skip reason. */
async function measure(entry, data, backend, texts) {
  let t0 = performance.now();
  let model;
  if (backend === 'cpu') {
    model = Model.load(data);
  } else {
    try {
      model = await Model.load_with_backend(data, 'webgpu'); // no CPU fallback: that would not measure the GPU
    } catch (e) {
      // e.g. no WebGPU adapter, or a model over the adapter's buffer limits
      return { skipped: `${entry.file} on the GPU: ${messageOf(e)}` };
    }
  }
  const loadMs = performance.now() - t0;
  try {
    const flops = model.forward_flops(texts); // the same length-sorted batches as embed's
    t0 = performance.now();
    if (backend === 'cpu') model.embed(texts);
    else await model.embed_async(texts);
    const seconds = (performance.now() - t0) / 1000;
    const s = model.backend_status();
    const row = {
      file: entry.file, dtype: entry.dtype, bytes: entry.bytes, backend, adapter: adapterOf(model),
      load_ms: loadMs, sentences: texts.length, sentences_per_s: texts.length / seconds,
      gflop_per_s: flops / seconds / 1e9,
    };
    // A GPU that failed mid-run finished on the CPU: the figure is not a GPU figure.
    if (backend !== 'cpu' && s.active !== 'webgpu') row.fell_back_to_cpu = s.fallback_reason;
    if (s.gpu_memory) row.gpu_memory = s.gpu_memory; // bytes of the GPU buffers created (bench/gpu.sh)
    return row;
  } finally {
    model.free();
  }
}

function line(r) {
  const where = r.backend === 'cpu' ? 'cpu' : `webgpu ${r.adapter ? r.adapter.name : '?'}${r.adapter && r.adapter.software ? ' (software)' : ''}`;
  return `${r.file.padEnd(32)} ${where.padEnd(28)} load ${r.load_ms.toFixed(0).padStart(6)} ms   ${r.sentences_per_s.toFixed(1).padStart(7)} sentences/s ${r.gflop_per_s.toFixed(1).padStart(7)} GFLOP/s`;
}

async function main() {
  const unknown = backends.filter((b) => !BACKENDS.includes(b));
  if (unknown.length) throw new Error(`unknown backend(s) ${unknown.join(', ')}: use ${BACKENDS.join(', ')}`);
  await init();
  const csvs = await Promise.all(SR_FILES.map((name) => bytes(`data/sr/${name}.csv`)));
  const texts = sentence_sample(csvs, count);
  const manifest = await (await fetch('models/manifest.json')).json();
  const files = manifest.models.filter((m) => !only || only.split(',').includes(m.file));
  const results = [];
  const skipped = [];
  for (const entry of files) {
    status.textContent = `${entry.file}: downloading…`;
    const data = await bytes(`models/${entry.file}`);
    for (const backend of backends) {
      status.textContent = `${entry.file}: embedding ${texts.length} sentences on the ${backend}…`;
      const r = await measure(entry, data, backend, texts);
      if (r.skipped) skipped.push(r.skipped);
      else results.push(r);
      out.textContent = [...results.map(line), ...skipped.map((s) => `skipped: ${s}`)].join('\n');
    }
  }
  out.dataset.json = JSON.stringify({ userAgent: navigator.userAgent, results, skipped });
  status.textContent = 'done';
}

main().catch((e) => {
  status.textContent = `failed: ${messageOf(e)}`;
  out.dataset.error = messageOf(e);
});
