// Runs bench.html (bench/web/) in headless Chromium against the served benchmark site
// (bench/out/site, made by bench/site.sh) and prints its figures.
// Usage: node bench/browser.mjs URL [sentences] [model files, comma-separated] [backends: cpu,webgpu]
// With "webgpu" (or "gpu") Chromium gets --enable-unsafe-webgpu; headless, its adapter is then SwiftShader
// (the GPU emulated on the CPU), which the table labels: those figures are not GPU speeds.
import { benchInChromium, SWIFTSHADER_ARGS } from './bench-page.mjs';

const [url, sentences = "2000", models = "", backends = "cpu"] = process.argv.slice(2);
if (!url) {
  console.error('usage: node bench/browser.mjs http://127.0.0.1:PORT/ [sentences] [models] [cpu,gpu]');
  process.exit(2);
}
const wantsGpu = backends.split(',').some((b) => b === 'webgpu' || b === 'gpu');
const { userAgent, results: rows, skipped = [] } = await benchInChromium(url, {
  sentences, models, backends, gpuArgs: wantsGpu ? SWIFTSHADER_ARGS : [],
});
if (!wantsGpu) {
  console.log(`browser CPU benchmark (wasm, 1 thread): ${rows[0]?.sentences} SR sentences — ${userAgent}`);
  console.log(`${'model file'.padEnd(36)} ${'load (ms)'.padStart(12)} ${'sentences/s'.padStart(14)} ${'GFLOP/s'.padStart(9)}`);
  for (const r of rows) {
    console.log(`${r.file.padEnd(36)} ${r.load_ms.toFixed(1).padStart(12)} ${r.sentences_per_s.toFixed(1).padStart(14)} ${r.gflop_per_s.toFixed(1).padStart(9)}`);
  }
} else {
  console.log(`browser benchmark, backends ${backends} (cpu: wasm, 1 thread; gpu: WebGPU): ${rows[0]?.sentences ?? sentences} SR sentences — ${userAgent}`);
  console.log(`${'model file'.padEnd(36)} ${'backend'.padEnd(56)} ${'load (ms)'.padStart(12)} ${'sentences/s'.padStart(14)} ${'GFLOP/s'.padStart(9)}`);
  for (const r of rows) {
    const emulated = r.adapter && r.adapter.software
      ? (/swiftshader/i.test(r.adapter.name) ? ' (SwiftShader: CPU emulation)' : ' (software adapter: CPU emulation)') : '';
    const adapter = r.adapter ? ` ${r.adapter.name}${emulated}` : '';
    const backend = r.backend === 'cpu' ? 'cpu (wasm)' : `webgpu${adapter}${r.fell_back_to_cpu ? ' → fell back to the CPU' : ''}`;
    console.log(`${r.file.padEnd(36)} ${backend.padEnd(56)} ${r.load_ms.toFixed(1).padStart(12)} ${r.sentences_per_s.toFixed(1).padStart(14)} ${r.gflop_per_s.toFixed(1).padStart(9)}`);
  }
}
for (const s of skipped) console.log(`skipped ${s}`);
