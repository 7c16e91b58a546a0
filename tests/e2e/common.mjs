// Shared by the E2E tests: what they need from the environment (checked once: a missing variable
// is a failure saying what to set, never a skipped test or a downgraded comparison), the browser,
// and the page's usual waits (a model ready, a pair scored).
//
//   SR_BENCH_URL     the built site, served by `sr-bench serve --dir www/dist`
//   SR_BENCH_EXPECT  the CLI's figures on the same files (build.sh writes tests/artifacts/e2e-expect.json)
//   SR_BENCH_CLI     the native CLI (only for the tests that run it)
//   CHROMIUM         the browser (default /usr/bin/chromium)

import fs from 'node:fs';
import { chromium } from 'playwright-core';

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

/** The CLI's expected figures (SR_BENCH_EXPECT), with every key in `keys` present. */
export function expected(keys) {
  const file = required('SR_BENCH_EXPECT');
  const data = JSON.parse(fs.readFileSync(file, 'utf8'));
  const missing = keys.filter((k) => data[k] === undefined || data[k] === null);
  if (missing.length) throw new Error(`${file} lacks ${missing.join(', ')}: ${HOW}`);
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

// ---- Benchmark runs and the page's workers (issue 14: soak and worker-death tests).

const SR_FILES = ['stsb', 'sickr', 'askubuntu', 'cqa', 'twitter', 'biosses'];
const SR_DIMENSIONS = ['structure', 'relation'];

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

/** The table and STS-B test shown equal `report` (a CLI quick report) within 0.01. */
export async function assertQuickReport(page, report) {
  for (const dim of SR_DIMENSIONS) {
    for (const f of [...SR_FILES, 'avg']) {
      const got = await dataValue(page, `[data-cell="${dim}-${f}"]`);
      const want = f === 'avg' ? report.results[dim].avg_spearman : report.results[dim][f].spearman;
      if (!(Math.abs(got - want) <= 0.01)) throw new Error(`${dim}/${f}: browser ${got} vs CLI ${want}`);
    }
  }
  const st = await dataValue(page, '#stsb-test-value');
  if (!(Math.abs(st - report.stsb_test.spearman) <= 0.01)) throw new Error(`STS-B test: browser ${st} vs CLI ${report.stsb_test.spearman}`);
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
