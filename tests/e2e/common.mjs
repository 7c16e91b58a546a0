// Shared by the E2E tests: what they need from the environment (checked once: a missing variable
// is a failure saying what to set, never a skipped test or a downgraded comparison), the browser,
// the page's usual waits (a model ready, a pair scored, a run ended), the CLI, and comparing the
// page's quick-split table with the CLI's report.
//
//   SR_BENCH_URL     the built site, served by `sr-bench serve --dir www/dist`
//   SR_BENCH_EXPECT  the CLI's figures on the same files (build.sh writes tests/artifacts/e2e-expect.json)
//   SR_BENCH_CLI     the native CLI (only for the tests that run it)
//   CHROMIUM         the browser (default /usr/bin/chromium)

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { SR_FILES as FILES } from '../../www/shared/protocol.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
export const ROOT = path.resolve(HERE, '..', '..');
export const ARTIFACTS = path.join(ROOT, 'tests', 'artifacts');
export { FILES };
export const DIMS = ['structure', 'relation'];
export const ACTIVE = 'The chef cooked the meal.';
export const PASSIVE = 'The meal was cooked by the chef.';
export const RUN_TIMEOUT = Number(process.env.SR_BENCH_E2E_RUN_TIMEOUT_MS || 15 * 60_000);

const HOW = 'run the e2e tests through `./build.sh test`, or set it by hand (see tests/e2e/common.mjs)';

function required(name) {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: ${HOW}`);
  return value;
}

/** The site under test (SR_BENCH_URL), normalised to end in '/'. */
export function siteUrl() {
  return new URL(required('SR_BENCH_URL')).href;
}

/** @type {Map<string, string>} sha256 of the model files already checked (path → digest). */
const checkedModels = new Map();

/**
 * The CLI's expected figures (SR_BENCH_EXPECT), with every key in `keys` present, made from the
 * model files as they are now: each file its `models` names (path under the project root →
 * sha256) must still have that sha256, or the figures are stale and the test fails.
 */
export function expected(keys) {
  const file = required('SR_BENCH_EXPECT');
  const data = JSON.parse(fs.readFileSync(file, 'utf8'));
  const missing = [...keys, 'models'].filter((k) => data[k] === undefined || data[k] === null);
  if (missing.length) throw new Error(`${file} lacks ${missing.join(', ')}: ${HOW}`);
  for (const [model, sha] of Object.entries(data.models)) {
    if (!checkedModels.has(model)) {
      const bytes = fs.readFileSync(path.resolve(ROOT, model));
      checkedModels.set(model, crypto.createHash('sha256').update(bytes).digest('hex'));
    }
    const now = checkedModels.get(model);
    if (now !== sha) {
      throw new Error(`${file} is stale: its figures come from ${model} with sha256 ${sha}, the file now has ${now}: ${HOW}`);
    }
  }
  return data;
}

/** The native CLI (SR_BENCH_CLI), which must exist. */
export function cliPath() {
  const cli = required('SR_BENCH_CLI');
  if (!fs.existsSync(cli)) throw new Error(`SR_BENCH_CLI=${cli} does not exist: build it (cargo build --release)`);
  return cli;
}

export const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
export const LAUNCH_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic', '--no-default-browser-check'];

/** Headless Chromium with LAUNCH_ARGS and `extraArgs` (e.g. --enable-unsafe-webgpu). */
export function launchChromium(extraArgs = []) {
  return chromium.launch({ executablePath: CHROMIUM, args: [...LAUNCH_ARGS, ...extraArgs] });
}

/** Waits until the page says a model of `dtype` is loaded and ready. */
export async function waitModelReady(page, dtype, timeout = 180_000) {
  await page.waitForFunction((d) => document.body.dataset.model === 'ready' &&
    document.getElementById('model-active').textContent.includes(d), dtype, { timeout });
}

const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');

/** axe-core's (npm, pinned) serious and critical violations in the page as it is now, one line
 * each. axe is injected as a script: open the page in a context with `bypassCSP: true`. */
export async function axeViolations(page) {
  if (!(await page.evaluate(() => 'axe' in globalThis))) await page.addScriptTag({ path: AXE });
  return page.evaluate(async () => (await globalThis.axe.run(document, { resultTypes: ['violations'] })).violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}): ${v.help}; ${v.nodes.length} node(s), first ${v.nodes[0].target.join(' ')}`));
}

/** Types a pair and waits for its score. */
export async function typePair(page, a, b) {
  await page.fill('#text-a', a);
  await page.fill('#text-b', b);
  await page.waitForSelector('#score-model:not([data-state="pending"])', { timeout: 120_000 });
}

/** An element's data-value as a number (NaN when absent). */
export async function dataValue(page, selector) {
  const v = await page.getAttribute(selector, 'data-value');
  return v === null || v === '' ? NaN : Number(v);
}

/** {base, origin, expect}: the served site and the CLI's expectations (both required). */
export function siteEnv() {
  const base = siteUrl();
  return { base, origin: new URL(base).origin, expect: expected(['active_passive_cosine', 'quick_report']) };
}

/** Collects console errors, page errors and worker errors of every page of `context`. */
export function watchErrors(context, errors) {
  context.on('console', (m) => { if (m.type() === 'error') errors.push(`console: ${m.text()}`); });
  context.on('weberror', (e) => errors.push(`pageerror: ${e.error().message}`));
  context.on('page', (p) => {
    p.on('worker', (w) => w.on('console', (m) => {
      if (m.type() === 'error') errors.push(`worker console: ${m.text()}`);
    }));
  });
}

/**
 * Makes the browser of `target` (a context or a page; before its first `goto`) ask pages to
 * save data, as Chromium's Data Saver does (`navigator.connection.saveData`): the page then
 * downloads no model until its Load button is pressed. The tests that choose what to load
 * themselves (a backend, another model, a file of their own) start so.
 */
export async function askToSaveData(target) {
  await target.addInitScript(() => {
    const c = /** @type {any} */ (navigator).connection;
    if (c) Object.defineProperty(Object.getPrototypeOf(c), 'saveData', { get: () => true, configurable: true });
    else Object.defineProperty(navigator, 'connection', { value: { saveData: true }, configurable: true });
  });
}

/** Waits until the page has decided about its first model: loading it (on arrival, or from the
 * cache) or waiting for the Load button (the browser asks to save data). */
export async function waitFirstLoadDecided(page, timeout = 30_000) {
  await page.waitForFunction(() => !!document.body.dataset.model ||
    document.getElementById('model-status').dataset.waiting === 'save-data', null, { timeout });
}

/** Opens the model panel ("Change model…") where it is folded, as a visitor does before
 * choosing another model, backend, file, URL or prefix. */
export async function openModelPanel(page) {
  if ((await page.getAttribute('#engine', 'data-folded')) === 'true') await page.click('#engine-toggle');
  await page.waitForSelector('#engine-body', { state: 'visible' });
}

/** Waits for the default model (q8_0 MiniLM): it loads on arrival, or with the "Load model"
 * button where the page waits for it (askToSaveData). */
export async function loadDefaultModel(page, dtype = 'q8_0', timeout = 300_000) {
  await waitFirstLoadDecided(page);
  if (await page.evaluate(() => !document.body.dataset.model)) {
    await openModelPanel(page);
    await page.click('#model-load');
  }
  await page.waitForFunction((d) => document.body.dataset.model === 'ready' &&
    document.getElementById('model-active').textContent.includes(d), dtype, { timeout });
}

/** Scores the pair in the playground; the model's cosine as the page holds it. */
export async function scorePair(page, a, b) {
  await page.fill('#text-a', a);
  await page.fill('#text-b', b);
  await page.waitForSelector('#score-model[data-state="ready"]', { timeout: 120_000 });
  return dataValue(page, '#score-model');
}

/** Clicks "Run benchmark" on `split` and waits for the run (and any ticked probes) to end. */
export async function runBenchmarkInPage(page, split, timeout = RUN_TIMEOUT) {
  await page.check(`input[name="split"][value="${split}"]`);
  await page.click('#run');
  // Idle again with a final message ("Running …" is the message while a run or a probe goes on).
  await page.waitForFunction(() => document.body.dataset.run === 'idle' &&
    !/^Running /.test(document.getElementById('run-msg').textContent), null, { timeout });
  const msg = await page.textContent('#run-msg');
  assert.equal(await page.getAttribute('#run-msg', 'data-level'), 'info', `the run ended: ${msg}`);
  return msg;
}

/** Ticks the benchmark panel's Data choice: `files` (SR file names) and STS-B test or not. A run
 * without STS-B test takes about half the time of the quick split's (STS-B test is 2,758 sentences). */
export async function chooseData(page, { files = FILES, stsbTest = true } = {}) {
  for (const f of FILES) await page.setChecked(`input[name="sr-file"][value="${f}"]`, files.includes(f));
  await page.setChecked('#bench-stsb-test', stsbTest);
}

/** Asserts the results table and STS-B test equal the CLI's quick report (±`tol` on ×100
 * Spearman, 0.01 unless said); returns the largest difference. */
export async function assertQuickTableEquals(page, cli, tol = 0.01) {
  let worst = 0;
  for (const dim of DIMS) {
    for (const f of [...FILES, 'avg']) {
      const got = await dataValue(page, `[data-cell="${dim}-${f}"]`);
      assert.ok(Number.isFinite(got), `${dim}/${f} shown`);
      const want = f === 'avg' ? cli.results[dim].avg_spearman : cli.results[dim][f].spearman;
      assert.ok(Math.abs(got - want) <= tol, `${dim}/${f}: browser ${got} vs CLI ${want}`);
      worst = Math.max(worst, Math.abs(got - want));
    }
  }
  const st = await dataValue(page, '#stsb-test-value');
  assert.ok(Number.isFinite(st), 'STS-B test Spearman shown');
  assert.ok(Math.abs(st - cli.stsb_test.spearman) <= tol, `STS-B test: browser ${st} vs CLI ${cli.stsb_test.spearman}`);
  return Math.max(worst, Math.abs(st - cli.stsb_test.spearman));
}

/** Runs `sr-bench ARGS… --json OUT` (SR_BENCH_CLI) from the repository root; the JSON it wrote. */
export function cliJson(args) {
  const cli = cliPath();
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  const dir = fs.mkdtempSync(path.join(ARTIFACTS, 'cli-'));
  const out = path.join(dir, 'out.json');
  try {
    execFileSync(cli, [...args, '--json', out], { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'], maxBuffer: 64 << 20 });
    return JSON.parse(fs.readFileSync(out, 'utf8'));
  } catch (e) {
    throw new Error(`sr-bench ${args.join(' ')} failed: ${String(e.stderr || e.message).trim().split('\n').at(-1)}`);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

// ---- Benchmark runs and the page's workers (the soak and worker-death tests).

/** Presses Run (split `split`) and waits until the first sentences are embedded. */
export async function startRun(page, split = 'quick') {
  await page.check(`input[name="split"][value="${split}"]`);
  await page.click('#run');
  await page.waitForFunction(() => document.body.dataset.run === 'running' &&
    Number(document.getElementById('run-stats').dataset.done || 0) > 0, null, { timeout: 180_000 });
}

/** Waits until the run ends (done, cancelled or failed: #run-msg says which). */
export async function waitRunDone(page, timeout = 300_000) {
  await page.waitForFunction(() => document.body.dataset.run === 'idle', null, { timeout });
}

/** The page's workers of one kind: 'engine' (worker.js) or 'helper' (embed-worker.js). */
export function workersOf(page, kind) {
  const file = kind === 'engine' ? '/worker.js' : '/embed-worker.js';
  return page.workers().filter((w) => new URL(w.url()).pathname.endsWith(file));
}

/** A worker's wasm memory in bytes (its `srBenchWasmBytes` diagnostic; NaN before its wasm starts). */
export async function wasmBytes(worker) {
  return worker.evaluate(() => (typeof self.srBenchWasmBytes === 'function' ? self.srBenchWasmBytes() : NaN));
}
