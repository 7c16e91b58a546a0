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
