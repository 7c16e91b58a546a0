// Accessibility of the page: axe-core (npm, pinned in package.json) over every panel with
// content in it (model, playground with its heat maps, also while they are recomputed, benchmark
// results, own pairs, the compare table) and the lesson, with 0 serious or critical violations;
// every visible control reachable with the Tab key; each heat map with a text alternative (its
// largest cells as a list).
//
//   SR_BENCH_URL=http://127.0.0.1:PORT/  node --test tests/e2e/a11y.test.mjs

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { ACTIVE, PASSIVE, ROOT, axeViolations as violations, launchChromium, loadDefaultModel, scorePair, siteUrl } from './common.mjs';

const BASE = siteUrl();

describe('accessibility', () => {
  let browser;
  let page;

  before(async () => {
    browser = await launchChromium();
    // axe is injected as a script: the page's CSP (script-src 'self') is bypassed for that alone.
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, bypassCSP: true });
    page = await context.newPage();
    await page.goto(BASE);
    await loadDefaultModel(page);
  });

  after(async () => {
    if (browser) await browser.close();
  });

  test('the model panel and the playground with its heat maps: no serious violation; each map has a text list', { timeout: 120_000 }, async () => {
    await scorePair(page, ACTIVE, PASSIVE);
    await page.waitForSelector('#explain figure.heatmap', { timeout: 60_000 });
    assert.deepEqual(await violations(page), []);
    // While the next pair is explained the old maps stay on screen, marked stale: still readable.
    await page.evaluate(() => { document.getElementById('explain').dataset.state = 'pending'; });
    assert.deepEqual(await violations(page), [], 'the explanation while it is recomputed');
    await page.evaluate(() => { document.getElementById('explain').dataset.state = 'ready'; });
    const lists = await page.$$eval('figure.heatmap', (figs) => figs.map((f) => f.querySelectorAll('.heatmap-top li').length));
    assert.ok(lists.length >= 2 && lists.every((n) => n === 5), `every map lists its 5 largest cells: ${lists}`);
    assert.match(await page.textContent('figure.heatmap .heatmap-top li'), / × .*: −?\d\.\d{3}$/);
  });

  test('results, own pairs and the compare table: no serious violation', { timeout: 300_000 }, async () => {
    for (const f of ['stsb', 'sickr', 'askubuntu', 'cqa', 'twitter', 'biosses']) await page.setChecked(`input[name="sr-file"][value="${f}"]`, f === 'biosses');
    await page.setChecked('#bench-stsb-test', false);
    const done = () => page.waitForFunction(() => document.body.dataset.run === 'idle' &&
      !/^Running /.test(document.getElementById('run-msg').textContent), null, { timeout: 240_000 });
    await page.click('#run');
    await done();
    await page.setInputFiles('#own-pairs-file', path.join(ROOT, 'tests/fixtures/own-pairs/sts.csv'));
    await page.click('#run');
    await done();
    assert.equal(await page.isVisible('#own-results'), true);
    assert.ok((await page.$$('#compare-body tr')).length >= 2);
    assert.deepEqual(await violations(page), []);
  });

  test('the lesson: no serious violation', { timeout: 120_000 }, async () => {
    await page.click('#lesson-open');
    await page.click('#lesson-go');
    await page.waitForFunction(() => document.getElementById('lesson').dataset.state === 'ready', null, { timeout: 60_000 });
    assert.deepEqual(await violations(page), []);
    await page.keyboard.press('Escape');
  });

  test('every visible control is reachable with Tab', { timeout: 120_000 }, async () => {
    const controls = await page.$$eval('button, input, select, textarea, a[href], [tabindex]', (all) => all
      .filter((e) => e.offsetParent !== null && !e.disabled && e.tabIndex >= 0 && !e.closest('[hidden]'))
      .map((e) => e.id || `${e.tagName.toLowerCase()}:${e.textContent.trim().slice(0, 30)}`));
    await page.evaluate(() => { document.activeElement?.blur(); window.scrollTo(0, 0); });
    const reached = new Set();
    for (let i = 0; i < controls.length * 2 + 20; i++) {
      await page.keyboard.press('Tab');
      reached.add(await page.evaluate(() => {
        const e = document.activeElement;
        return e ? (e.id || `${e.tagName.toLowerCase()}:${e.textContent.trim().slice(0, 30)}`) : '';
      }));
    }
    const missed = controls.filter((c) => !reached.has(c));
    assert.deepEqual(missed, [], `not reachable by Tab (of ${controls.length})`);
  });
});
