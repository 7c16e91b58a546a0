// Shared helpers of the E2E tests: the environment they need, the browser, and the page's
// usual waits (a model ready, a pair scored).

import { chromium } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
export const LAUNCH_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic', '--no-default-browser-check'];

/** The named environment variables' values; a missing one fails the test run with `why`. */
export function requireEnv(why) {
  const missing = Object.keys(why).filter((k) => !process.env[k]);
  if (missing.length) {
    throw new Error(`E2E: ${missing.map((k) => `${k} is not set (${why[k]})`).join('; ')}`);
  }
  return Object.fromEntries(Object.keys(why).map((k) => [k, process.env[k]]));
}

export function launchChromium() {
  return chromium.launch({ executablePath: CHROMIUM, args: LAUNCH_ARGS });
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
