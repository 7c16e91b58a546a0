// Without --enable-unsafe-webgpu, headless Chromium has no WebGPU adapter: the `auto` backend
// must select the CPU, say why, and still embed; `gpu` must fail with a plain message.
//
//   SR_BENCH_URL=http://127.0.0.1:PORT/ node --test tests/e2e/webgpu-fallback.test.mjs

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { askToSaveData, launchChromium, siteUrl } from './common.mjs';

const BASE = siteUrl();

test('auto backend falls back to the CPU, with a reason, when WebGPU is unavailable', async () => {
  const browser = await launchChromium(); // deliberately no --enable-unsafe-webgpu
  try {
    const page = await browser.newPage();
    await askToSaveData(page); // the page's own model load is not what this test measures
    // Any page of the site will do (the wasm is imported from it); the demo page is the one it ships.
    await page.goto(new URL('index.html', BASE).href);
    const result = await page.evaluate(async () => {
      const wasm = await import('./pkg/sr_bench.js');
      await wasm.default();
      const manifest = await (await fetch('models/manifest.json')).json();
      const entry = manifest.models.find((m) => m.default);
      const bytes = new Uint8Array(await (await fetch(`models/${entry.file}`).then((r) => r.arrayBuffer())));
      const model = await wasm.Model.load_with_backend(bytes, 'auto');
      const status = model.backend_status();
      const score = await model.similarity_async('Rain causes floods.', 'Floods cause rain.');
      let gpuError = null;
      try {
        await wasm.Model.load_with_backend(bytes, 'gpu');
      } catch (e) {
        gpuError = String(e.message || e);
      }
      return { hasGpu: 'gpu' in navigator && !!(await navigator.gpu?.requestAdapter()), status, score, gpuError };
    });
    assert.equal(result.hasGpu, false, 'this browser must have no WebGPU adapter for the test to mean anything');
    assert.equal(result.status.requested, 'auto');
    assert.equal(result.status.active, 'cpu');
    assert.match(result.status.fallback_reason, /WebGPU is not available/);
    assert.ok(result.score > 0 && result.score <= 1, `the CPU still embeds: ${result.score}`);
    assert.match(result.gpuError ?? '', /WebGPU is not available/);
  } finally {
    await browser.close();
  }
});
