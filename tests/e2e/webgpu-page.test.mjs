// The page's backend picker, end to end (playwright-core + the system Chromium):
//  - with --enable-unsafe-webgpu (headless Chromium then gives SwiftShader, a software adapter):
//    WebGPU loads the default model on the GPU, the page names the adapter and warns that it is
//    CPU emulation, the similarity equals the CPU backend's, a GPU run reports progress, and the
//    JSON export carries backend_status;
//  - without the flag (no adapter): Auto and WebGPU both end up on the CPU and say why.
// Kept short on purpose: SwiftShader embeds a few sentences per second.
//
//   SR_BENCH_URL=http://127.0.0.1:PORT/ node --test tests/e2e/webgpu-page.test.mjs

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { askToSaveData, expected, launchChromium, openModelPanel, siteUrl } from './common.mjs';

const BASE = siteUrl();
const EXPECT = expected(['active_passive_cosine']);
const ARTIFACTS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'artifacts');
const ACTIVE = 'The chef cooked the meal.';
const PASSIVE = 'The meal was cooked by the chef.';

/** Opens the page in a fresh browser; collects console and page errors. */
async function openPage(extraArgs) {
  const browser = await launchChromium(extraArgs);
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
  await askToSaveData(context); // the backend is chosen before the test presses Load
  const errors = [];
  context.on('weberror', (e) => errors.push(`pageerror: ${e.error().message}`));
  const page = await context.newPage();
  page.on('console', (m) => { if (m.type() === 'error') errors.push(`console: ${m.text()}`); });
  page.on('worker', (w) => w.on('console', (m) => { if (m.type() === 'error') errors.push(`worker console: ${m.text()}`); }));
  await page.goto(BASE);
  await page.waitForSelector('#model-select:not([disabled])', { state: 'attached' });
  return { browser, page, errors };
}

async function loadWithBackend(page, backend) {
  await openModelPanel(page);
  await page.check(`input[name="backend"][value="${backend}"]`);
  await page.click('#model-load');
  await page.waitForFunction(() => (document.body.dataset.model === 'ready' &&
    document.getElementById('active-backend').dataset.active) || document.body.dataset.model === 'error', null, { timeout: 180_000 })
    .catch(async (e) => {
      throw new Error(`${e.message} (model ${await page.evaluate(() => document.body.dataset.model)}; ` +
        `status "${await page.textContent('#model-status')}"; progress "${await page.textContent('#model-progress-text')}")`);
    });
  assert.equal(await page.evaluate(() => document.body.dataset.model), 'ready', await page.textContent('#model-status'));
}

/** The active/passive cosine on the page, once computed. */
async function pageCosine(page) {
  await page.fill('#text-a', ACTIVE);
  await page.fill('#text-b', PASSIVE);
  await page.waitForSelector('#score-model[data-state="ready"]', { timeout: 180_000 });
  return Number(await page.getAttribute('#score-model', 'data-value'));
}

/** The CPU backend's cosine for the same pair and file, computed in the page by the wasm module. */
function cpuCosine(page) {
  return page.evaluate(async ([a, b]) => {
    const wasm = await import('./pkg/sr_bench.js');
    await wasm.default();
    const manifest = await (await fetch('models/manifest.json')).json();
    const entry = manifest.models.find((m) => m.default);
    const model = wasm.Model.load(new Uint8Array(await (await fetch(`models/${entry.file}`)).arrayBuffer()));
    try { return model.similarity(a, b); } finally { model.free(); }
  }, [ACTIVE, PASSIVE]);
}

describe('backend picker with WebGPU (SwiftShader)', () => {
  let browser;
  let page;
  let errors;
  before(async () => ({ browser, page, errors } = await openPage(['--enable-unsafe-webgpu'])));
  after(async () => { if (browser) await browser.close(); });

  test('WebGPU runs the default model, names the adapter and warns it is software', { timeout: 300_000 }, async (t) => {
    assert.equal(await page.isChecked('input[name="backend"][value="cpu"]'), true, 'CPU is the default');
    assert.equal(await page.isDisabled('input[name="backend"][value="webgpu"]'), false, 'WebGPU offered');
    await loadWithBackend(page, 'webgpu');
    assert.match(await page.inputValue('#model-select'), /@q8_0$/);
    const active = page.locator('#active-backend');
    assert.equal(await active.getAttribute('data-active'), 'webgpu');
    const shown = await active.textContent();
    // Headless Chromium's only adapter is SwiftShader; wgpu gets no name in the browser, the page
    // takes it from the browser's GPUAdapterInfo.
    assert.match(shown, /^WebGPU · .*swiftshader/i, `the adapter is named: ${shown}`);
    assert.equal(await page.isVisible('#backend-software'), true, 'software-adapter notice shown');
    assert.match(await page.textContent('#backend-software'), /software fallback.*emulated on the CPU/);
    assert.equal(await page.isVisible('#backend-fallback'), false);
    await page.waitForFunction(() => location.hash.includes('backend=webgpu'), null, { timeout: 5000 });
    t.diagnostic(`Running on: ${shown}`);
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: path.join(ARTIFACTS, 'webgpu-backend.png') });

    const gpu = await pageCosine(page);
    const cpu = await cpuCosine(page);
    assert.ok(Math.abs(gpu - cpu) <= 1e-4, `WebGPU ${gpu} vs CPU ${cpu}`);
    assert.ok(Math.abs(gpu - EXPECT.active_passive_cosine) <= 1e-4, `WebGPU ${gpu} vs CLI ${EXPECT.active_passive_cosine}`);
    t.diagnostic(`active/passive cosine: WebGPU ${gpu}, CPU ${cpu}`);
  });

  test('a benchmark on WebGPU reports progress and can be cancelled; the export records the backend', { timeout: 300_000 }, async () => {
    await page.click('#run'); // the quick split, embedded on the GPU chunk by chunk
    await page.waitForFunction(() => document.body.dataset.run === 'running' &&
      Number(document.getElementById('run-stats').dataset.done || 0) > 0 &&
      /sentences\/s/.test(document.getElementById('run-stats').textContent), null, { timeout: 240_000 });
    await page.click('#cancel');
    await page.waitForFunction(() => document.body.dataset.run === 'idle', null, { timeout: 120_000 });
    assert.match(await page.textContent('#run-msg'), /cancelled/i);

    // The syntax-blind baseline finishes in seconds and gives a result to export.
    await page.selectOption('#encoder', 'static');
    await page.click('#run');
    await page.waitForFunction(() => /^Done/.test(document.getElementById('run-msg').textContent), null, { timeout: 120_000 });
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#export-json')]);
    const json = JSON.parse(fs.readFileSync(await download.path(), 'utf8'));
    assert.equal(json.backend, 'webgpu');
    assert.equal(json.backend_choice, 'webgpu');
    assert.equal(json.backend_status.requested, 'webgpu');
    assert.equal(json.backend_status.active, 'webgpu');
    assert.equal(json.backend_status.software_adapter, true);
    assert.ok(json.backend_status.adapter && json.backend_status.adapter.name, 'the adapter is recorded');
    assert.equal(json.backend_status.adapter.browser_info.architecture, 'swiftshader');
    assert.deepEqual(errors, [], 'console errors');
  });
});

describe('backend picker without a WebGPU adapter', () => {
  let browser;
  let page;
  let errors;
  before(async () => ({ browser, page, errors } = await openPage([]))); // deliberately no --enable-unsafe-webgpu
  after(async () => { if (browser) await browser.close(); });

  test('Auto runs on the CPU and says why', { timeout: 300_000 }, async () => {
    assert.equal(await page.evaluate(async () => !!(navigator.gpu && await navigator.gpu.requestAdapter())), false,
      'this browser must have no WebGPU adapter for the test to mean anything');
    await loadWithBackend(page, 'auto');
    assert.equal(await page.getAttribute('#active-backend', 'data-active'), 'cpu');
    assert.match(await page.textContent('#active-backend'), /CPU/);
    assert.equal(await page.isVisible('#backend-fallback'), true, 'the reason is shown');
    assert.match(await page.textContent('#backend-fallback'), /WebGPU is not available/);
    assert.equal(await page.isVisible('#backend-software'), false);
    const cos = await pageCosine(page);
    assert.ok(Math.abs(cos - EXPECT.active_passive_cosine) <= 1e-4, `page ${cos} vs CLI ${EXPECT.active_passive_cosine}`);
  });

  test('WebGPU without an adapter falls back to the CPU with a message, never an error', { timeout: 300_000 }, async () => {
    // Headless Chromium has navigator.gpu but no adapter: the choice is offered, so the
    // fallback (not the disabled radio) is what this test exercises.
    assert.equal(await page.evaluate(() => 'gpu' in navigator), true, 'this browser must have the WebGPU API (without an adapter)');
    assert.equal(await page.isDisabled('input[name="backend"][value="webgpu"]'), false, 'the WebGPU choice is offered');
    await openModelPanel(page);
    await page.check('input[name="backend"][value="webgpu"]'); // reloads the loaded model
    await page.waitForFunction(() => document.body.dataset.model === 'ready' &&
      document.getElementById('active-backend').dataset.requested === 'webgpu', null, { timeout: 180_000 });
    assert.equal(await page.getAttribute('#active-backend', 'data-active'), 'cpu');
    assert.match(await page.textContent('#backend-fallback'), /GPU backend is unavailable: WebGPU is not available/);
    assert.doesNotMatch(await page.getAttribute('#model-status', 'class') || '', /is-error/);
    await page.waitForSelector('#score-model[data-state="ready"]', { timeout: 60_000 });
    assert.deepEqual(errors, [], 'console errors');
  });
});
