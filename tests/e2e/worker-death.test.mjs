// A worker that dies mid-run (workers that die): the page's workers are stopped from inside with
// `self.close()`, which fires no event, as a crashed or killed worker may do.
//   - an embedding helper → it is replaced, its chunks are redone, and the run's table equals the
//     CLI's quick report;
//   - the engine worker → the page says the run was interrupted, shows no numbers of it, restarts
//     the engine with the same model, and a new run equals the CLI's quick report.
// Environment: see common.mjs.

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  askToSaveData, assertQuickTableEquals, expected, launchChromium, openModelPanel, siteUrl, startRun,
  waitModelReady, waitRunDone, workersOf,
} from './common.mjs';

const BASE = siteUrl();
const EXPECT = expected(['quick_report']);
const RUN_TIMEOUT = 300_000;

describe('a worker that dies mid-run', () => {
  let browser;
  let page;

  before(async () => {
    browser = await launchChromium();
    const context = await browser.newContext();
    await askToSaveData(context); // the test presses Load itself
    page = await context.newPage();
    await page.goto(BASE);
    await page.waitForSelector('#model-select:not([disabled])', { state: 'attached' });
    await openModelPanel(page);
    await page.click('#model-load');
    await waitModelReady(page, 'q8_0');
  });

  after(async () => {
    if (browser) await browser.close();
  });

  test('a helper stopped mid-run is replaced and the run equals the CLI', { timeout: RUN_TIMEOUT }, async (t) => {
    const t0 = Date.now();
    await startRun(page);
    const [victim] = workersOf(page, 'helper');
    assert.ok(victim, 'the run has helper workers');
    const doneAtKill = Number(await page.getAttribute('#run-stats', 'data-done'));
    await victim.evaluate(() => self.close());
    // While the run goes on, the page says a helper was replaced (and why).
    await page.waitForFunction(() => /was replaced/.test(document.getElementById('run-msg').textContent), null, { timeout: RUN_TIMEOUT });
    const notice = await page.textContent('#run-msg');
    const noticedAfter = (Date.now() - t0) / 1000;
    await waitRunDone(page, RUN_TIMEOUT);
    const message = await page.textContent('#run-msg');
    assert.match(message, /^Done/, message);
    assert.match(message, /1 engine helper\(s\) stopped during the run and were replaced/);
    await assertQuickTableEquals(page, EXPECT.quick_report);
    t.diagnostic(`helper closed at ${doneAtKill} sentences; ${noticedAfter.toFixed(1)} s into the run the page said: ${notice}`);
    t.diagnostic(`run finished in ${((Date.now() - t0) / 1000).toFixed(1)} s: ${message}`);
  });

  test('the engine stopped mid-run: the page says so, shows none of it, recovers, and a new run works', { timeout: RUN_TIMEOUT }, async (t) => {
    const before = await page.textContent('#results-caption');
    const t0 = Date.now();
    await startRun(page);
    const [engine] = workersOf(page, 'engine');
    await engine.evaluate(() => self.close());
    await page.waitForFunction(() => document.body.dataset.run === 'idle', null, { timeout: 120_000 });
    const message = await page.textContent('#run-msg');
    assert.match(message, /interrupted.*stopped answering.*No results from this run are shown/s, message);
    const noticedAfter = (Date.now() - t0) / 1000;
    assert.equal(await page.textContent('#results-caption'), before, 'the results shown are still the earlier run\'s');
    await waitModelReady(page, 'q8_0');
    assert.equal(workersOf(page, 'engine').length, 1, 'one engine worker, the new one');
    assert.match(await page.textContent('#model-status'), /Ready/);
    await startRun(page);
    await waitRunDone(page, RUN_TIMEOUT);
    assert.match(await page.textContent('#run-msg'), /^Done/);
    await assertQuickTableEquals(page, EXPECT.quick_report);
    t.diagnostic(`engine closed mid-run: interruption shown after ${noticedAfter.toFixed(1)} s; ` +
      `recovered and a new run finished ${((Date.now() - t0) / 1000).toFixed(1)} s after the kill`);
  });
});
