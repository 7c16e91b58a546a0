// A visitor's first visit on a phone and on a desktop: the default model loads on arrival,
// without a click, and the two sentences and the score fit a 390 × 844 screen (and the verdict
// too, a 1366 × 900 and a 1280 × 720 one) with the model panel folded to one line that reopens
// (and stays as the visitor left it); where the browser asks to save data, nothing is downloaded
// until the Load button (which names the size) is pressed. axe-core checks every layout, the
// panel open and folded.
//
//   SR_BENCH_URL=http://127.0.0.1:PORT/  node --test tests/e2e/first-visit.test.mjs

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { ARTIFACTS, askToSaveData, axeViolations, launchChromium, siteUrl, watchErrors } from './common.mjs';

const BASE = siteUrl();
const PHONE = { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 2, bypassCSP: true };

describe('first visit on a phone and a desktop', () => {
  let browser;
  const errors = [];
  before(async () => { browser = await launchChromium(); });
  after(async () => { if (browser) await browser.close(); });

  /** A fresh phone-sized context (an empty cache); the model files it requests are counted. */
  async function phone(saveData) {
    const context = await browser.newContext(PHONE);
    if (saveData) await askToSaveData(context);
    watchErrors(context, errors);
    const gguf = [];
    context.on('request', (r) => { if (/\.gguf(\.part\d+)?$/.test(new URL(r.url()).pathname)) gguf.push(r.url()); });
    return { context, page: await context.newPage(), gguf };
  }

  test('the preset pair is scored without a click, the sentences and the score in the first screen', { timeout: 240_000 }, async () => {
    const { context, page, gguf } = await phone(false);
    await page.goto(BASE);
    await page.waitForSelector('#score-model[data-state="ready"]', { timeout: 180_000 });
    assert.ok(gguf.length > 0, 'the model was downloaded on arrival');
    assert.equal(await page.evaluate(() => window.scrollY), 0, 'nothing scrolled');
    for (const id of ['text-a', 'text-b', 'score-model']) {
      const box = await page.locator(`#${id}`).boundingBox();
      assert.ok(box && box.y >= 0 && box.x >= 0 && box.y + box.height <= 844 && box.x + box.width <= 390,
        `#${id} inside the first 390 × 844 screen: ${JSON.stringify(box)}`);
    }
    // The model panel is one line: the model's name and its precision, and a button to reopen it.
    const fold = await page.locator('#engine').boundingBox();
    assert.ok(fold && fold.height <= 90, `the folded model panel is one line high: ${fold && fold.height} px`);
    assert.equal(await page.getAttribute('#engine', 'data-folded'), 'true');
    assert.match(await page.textContent('#engine-summary'), /all-MiniLM-L6-v2 · q8_0/);
    assert.equal(await page.isVisible('#model-select'), false);
    await page.screenshot({ path: path.join(ARTIFACTS, 'phone-first-screen.png') });
    await page.click('#engine-toggle');
    assert.equal(await page.getAttribute('#engine-toggle', 'aria-expanded'), 'true');
    assert.equal(await page.isVisible('#model-select'), true, 'reopened: the picker is back');
    assert.deepEqual(await axeViolations(page), [], 'the phone layout, panel open');
    await page.click('#engine-toggle');
    assert.equal(await page.isVisible('#model-select'), false, 'folded again');
    assert.deepEqual(await axeViolations(page), [], 'the phone layout, panel folded');
    await context.close();
  });

  // A desktop: the same first screen, the panel one summary line with "Change model…".
  for (const [width, height] of [[1366, 900], [1280, 720]]) {
    test(`${width} × ${height}: the pair, its score and the verdict in the first screen; the panel one line`, { timeout: 240_000 }, async (t) => {
      const context = await browser.newContext({ viewport: { width, height }, bypassCSP: true });
      watchErrors(context, errors);
      const page = await context.newPage();
      await page.goto(BASE);
      await page.waitForSelector('#score-model[data-state="ready"]', { timeout: 180_000 });
      assert.equal(await page.evaluate(() => window.scrollY), 0, 'nothing scrolled');
      for (const id of ['text-a', 'text-b', 'verdict', 'score-model', 'meter-model', 'score-static', 'meter-static']) {
        const box = await page.locator(`#${id}`).boundingBox();
        assert.ok(box && box.y >= 0 && box.x >= 0 && box.y + box.height <= height && box.x + box.width <= width,
          `#${id} inside the first ${width} × ${height} screen: ${JSON.stringify(box)}`);
      }
      assert.match(await page.textContent('#verdict'), /^Same meaning\./, 'the preset pair\'s verdict');
      assert.equal(await page.getAttribute('#engine', 'data-folded'), 'true');
      const fold = await page.locator('#engine').boundingBox();
      assert.ok(fold && fold.height <= 80, `the folded model panel is one line high: ${fold && fold.height} px`);
      const meter = await page.locator('#meter-model').boundingBox();
      t.diagnostic(`the model's score bar ends at y ${Math.round(meter.y + meter.height)} of ${height}; the panel is ${Math.round(fold.height)} px high`);
      assert.match(await page.textContent('#engine-summary'), /^all-MiniLM-L6-v2 · q8_0 · CPU · ready$/);
      assert.match(await page.textContent('#engine-toggle'), /Change model…/);
      assert.equal(await page.isVisible('#model-select'), false);
      await page.screenshot({ path: path.join(ARTIFACTS, `desktop-first-screen-${width}x${height}.png`) });
      assert.deepEqual(await axeViolations(page), [], 'the desktop layout, panel folded');
      await page.click('#engine-toggle');
      assert.equal(await page.getAttribute('#engine-toggle', 'aria-expanded'), 'true');
      for (const id of ['model-select', 'model-load', 'url-model', 'url-fetch', 'local-max-seq']) {
        assert.equal(await page.locator(`#${id}`).isVisible(), true, `#${id} shown once opened`);
      }
      assert.deepEqual(await axeViolations(page), [], 'the desktop layout, panel open');
      // A visitor who opened it finds it open on their next visit, and folded once they fold it.
      await page.reload();
      await page.waitForSelector('#score-model[data-state="ready"]', { timeout: 180_000 });
      assert.equal(await page.getAttribute('#engine', 'data-folded'), 'false', 'open again after a reload');
      await page.click('#engine-toggle');
      await page.reload();
      await page.waitForSelector('#model-select:not([disabled])', { state: 'attached' });
      assert.equal(await page.getAttribute('#engine', 'data-folded'), 'true', 'folded again after a reload');
      await context.close();
    });
  }

  test('where the browser asks to save data, nothing is downloaded until the button is pressed', { timeout: 240_000 }, async () => {
    const { context, page, gguf } = await phone(true);
    await page.goto(BASE);
    await page.waitForFunction(() => document.getElementById('model-status').dataset.waiting === 'save-data', null, { timeout: 30_000 });
    await page.waitForTimeout(2000); // time enough for a download that should not start
    assert.deepEqual(gguf, [], 'no model file requested');
    assert.equal(await page.evaluate(() => document.body.dataset.model), undefined, 'no model loading');
    assert.match(await page.textContent('#model-status'), /asks to save data.*all-MiniLM-L6-v2 · q8_0 is a \d+\.\d MB download/);
    const button = page.locator('#model-load');
    assert.match(await button.textContent(), /^Load model \(\d+\.\d MB\)$/);
    const box = await button.boundingBox();
    assert.ok(box && box.y + box.height <= 844, `the button is in the first screen: ${JSON.stringify(box)}`);
    await button.click();
    await page.waitForSelector('#score-model[data-state="ready"]', { timeout: 180_000 });
    assert.ok(gguf.length > 0, 'downloaded once pressed');
    await context.close();
    assert.deepEqual(errors, []);
  });
});
