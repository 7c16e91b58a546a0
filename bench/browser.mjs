// Runs www/bench.html in headless Chromium against a served site and prints its figures.
// Usage: node bench/browser.mjs URL [sentences] [model files, comma-separated] [backends: cpu,webgpu]
// With "webgpu" (or "gpu") Chromium gets --enable-unsafe-webgpu; headless, its adapter is then SwiftShader
// (the GPU emulated on the CPU), which the table labels: those figures are not GPU speeds.
import { chromium } from 'playwright-core';

const [url, sentences = "2000", models = "", backends = "cpu"] = process.argv.slice(2);
if (!url) {
  console.error('usage: node bench/browser.mjs http://127.0.0.1:PORT/ [sentences] [models] [cpu,gpu]');
  process.exit(2);
}
const wantsGpu = backends.split(',').some((b) => b === 'webgpu' || b === 'gpu');
const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-background-networking',
    '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic',
    ...(wantsGpu ? ['--enable-unsafe-webgpu'] : [])],
});
try {
  const page = await browser.newPage();
  page.on('console', (m) => { if (m.type() === 'error') console.error('console:', m.text()); });
  const query = new URLSearchParams({ sentences, models, backends });
  await page.goto(new URL(`bench.html?${query}`, url).href);
  const results = page.locator('#results[data-json], #results[data-error]');
  await results.waitFor({ state: 'attached', timeout: 30 * 60 * 1000 });
  const error = await page.locator('#results').getAttribute('data-error');
  if (error) throw new Error(error);
  const { userAgent, cpu_build: cpuBuild, results: rows, skipped = [] } = JSON.parse(await page.locator('#results').getAttribute('data-json'));
  if (!wantsGpu) {
    console.log(`browser CPU benchmark (wasm ${cpuBuild}, 1 thread): ${rows[0]?.sentences} SR sentences — ${userAgent}`);
    console.log(`${'model file'.padEnd(36)} ${'load (ms)'.padStart(12)} ${'sentences/s'.padStart(14)}`);
    for (const r of rows) {
      console.log(`${r.file.padEnd(36)} ${r.load_ms.toFixed(1).padStart(12)} ${r.sentences_per_s.toFixed(1).padStart(14)}`);
    }
  } else {
    console.log(`browser benchmark, backends ${backends} (cpu: wasm ${cpuBuild}, 1 thread; gpu: WebGPU): ${rows[0]?.sentences ?? sentences} SR sentences — ${userAgent}`);
    console.log(`${'model file'.padEnd(36)} ${'backend'.padEnd(56)} ${'load (ms)'.padStart(12)} ${'sentences/s'.padStart(14)}`);
    for (const r of rows) {
      const emulated = r.adapter && r.adapter.software
        ? (/swiftshader/i.test(r.adapter.name) ? ' (SwiftShader: CPU emulation)' : ' (software adapter: CPU emulation)') : '';
      const adapter = r.adapter ? ` ${r.adapter.name}${emulated}` : '';
      const backend = r.backend === 'cpu' ? 'cpu (wasm)' : `webgpu${adapter}${r.fell_back_to_cpu ? ' → fell back to the CPU' : ''}`;
      console.log(`${r.file.padEnd(36)} ${backend.padEnd(56)} ${r.load_ms.toFixed(1).padStart(12)} ${r.sentences_per_s.toFixed(1).padStart(14)}`);
    }
  }
  for (const s of skipped) console.log(`skipped ${s}`);
} finally {
  await browser.close();
}
