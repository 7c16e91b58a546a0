// E2E of offline class mode: a first visit loads the default model and waits for
// "Ready for offline use"; then the network is switched off (context.setOffline) and a new page
// load in the same browser context scores a pair (the CLI's cosine) and runs the quick split
// (the CLI's quick report), served by the service worker and the sha256-checked model cache.
//
//   SR_BENCH_URL=http://127.0.0.1:PORT/  SR_BENCH_EXPECT=tests/artifacts/e2e-expect.json
//   node --test tests/e2e/offline.test.mjs        (both required)

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  ACTIVE, PASSIVE, RUN_TIMEOUT, assertQuickTableEquals, launchChromium, loadDefaultModel, runBenchmarkInPage,
  scorePair, siteEnv, watchErrors,
} from './common.mjs';

describe('offline class mode', () => {
  let browser;
  let context;
  let env;
  const errors = [];

  before(async () => {
    env = siteEnv();
    assert.ok(Number.isFinite(env.expect.active_passive_cosine), 'SR_BENCH_EXPECT has active_passive_cosine');
    assert.ok(env.expect.quick_report, 'SR_BENCH_EXPECT has quick_report');
    browser = await launchChromium();
    context = await browser.newContext({ viewport: { width: 1280, height: 900 }, serviceWorkers: 'allow' });
    watchErrors(context, errors);
  });
  after(async () => { if (browser) await browser.close(); });

  test('first visit: the model loads and the page says it is ready for offline use', { timeout: 300_000 }, async (t) => {
    const page = await context.newPage();
    const t0 = Date.now();
    await page.goto(env.base);
    await loadDefaultModel(page);
    await page.waitForFunction(() => document.getElementById('offline-status').dataset.ready === 'yes', null, { timeout: 120_000 });
    const line = await page.textContent('#offline-status');
    assert.match(line, /^Ready for offline use: app, data and all-MiniLM-L6-v2 · q8_0 are stored in this browser\.$/);
    assert.match(await page.getAttribute('#offline-status', 'data-build'), /^[0-9a-f]{16}$/);
    t.diagnostic(`ready for offline use after ${((Date.now() - t0) / 1000).toFixed(1)} s: ${line}`);
    await page.close();
  });

  test('network off: a new page load scores a pair and runs the quick split like the CLI', { timeout: RUN_TIMEOUT }, async (t) => {
    await context.setOffline(true);
    // While offline every answer must come from the service worker, and nothing may fail.
    const notFromSw = [];
    const failed = [];
    context.on('response', (r) => { if (r.url().startsWith('http') && !r.fromServiceWorker()) notFromSw.push(r.url()); });
    context.on('requestfailed', (r) => failed.push(r.url()));
    const page = await context.newPage();
    const t0 = Date.now();
    const res = await page.goto(env.base);
    assert.equal(res.status(), 200);
    assert.equal(res.fromServiceWorker(), true, 'the page came from the service worker');
    assert.ok(res.headers()['content-security-policy'], 'the stored page keeps its CSP header');
    await loadDefaultModel(page, 'q8_0', 120_000); // from the model cache: loaded without a click
    assert.equal(await page.getAttribute('#model-status', 'data-source'), 'cache');
    const cos = await scorePair(page, ACTIVE, PASSIVE);
    assert.ok(Math.abs(cos - env.expect.active_passive_cosine) <= 1e-4, `offline ${cos} vs CLI ${env.expect.active_passive_cosine}`);
    await runBenchmarkInPage(page, 'quick');
    await assertQuickTableEquals(page, env.expect.quick_report);
    t.diagnostic(`offline: page load, model, pair and quick split in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    assert.deepEqual(notFromSw, [], 'offline, everything came from the service worker');
    assert.deepEqual(failed, [], 'offline, no request failed');
    const errorsBefore = errors.length;
    // The switch really cut the network: what the service worker does not store cannot be fetched.
    const missed = await page.evaluate(async (u) => {
      try { await fetch(u, { cache: 'no-store' }); return false; } catch { return true; }
    }, new URL('models/manifest.json?not-stored', env.base).href);
    assert.equal(missed, true, 'a request for something not stored fails while offline');
    await page.waitForTimeout(500); // its console message
    errors.splice(errorsBefore).forEach((e) => assert.match(e, /ERR_INTERNET_DISCONNECTED/));
    await context.setOffline(false);
  });

  test('nothing was logged as an error', () => {
    assert.deepEqual(errors, []);
  });
});
