// E2E: the Lesson walks through its six steps by keyboard alone, each step's number from the live
// model and equal to the CLI on the same file (env: see common.mjs).
//
//   node --test tests/e2e/lesson.test.mjs

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ARTIFACTS, ROOT, RUN_TIMEOUT, askToSaveData, cliPath, expected, launchChromium, siteUrl } from './common.mjs';

const MODEL = path.join(ROOT, 'www/models/all-MiniLM-L6-v2.q8_0.gguf');
const BASE = siteUrl();
const EXPECT = expected(['active_passive_cosine', 'quick_report']);
const CLI = cliPath();

const cliCosine = (a, b) => Number(execFileSync(CLI, ['similarity', '--model', MODEL, a, b], { encoding: 'utf8' }));
const words = (t) => t.split(/\s+/).filter(Boolean).sort();

describe('Lesson mode', () => {
  let browser;
  let page;
  const errors = [];

  before(async () => {
    browser = await launchChromium();
    // A projector's resolution.
    page = await browser.newPage({ viewport: { width: 1600, height: 900 } });
    await askToSaveData(page); // the lesson's first step is the one that loads the model
    page.on('pageerror', (e) => errors.push(String(e)));
    page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
    await page.goto(BASE);
    await page.waitForFunction(() => !document.getElementById('model-select').disabled, null, { timeout: 30_000 });
  });
  after(async () => { if (browser) await browser.close(); });

  const step = () => page.getAttribute('#lesson', 'data-step').then(Number);
  /** Enter on the focused action button; waits for the step's answer. */
  async function act(timeout = 180_000) {
    assert.equal(await page.evaluate(() => document.activeElement.id), 'lesson-go', 'the step’s one action has the focus');
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => ['ready', 'error'].includes(document.getElementById('lesson').dataset.state), null, { timeout });
    assert.equal(await page.getAttribute('#lesson', 'data-state'), 'ready', await page.textContent('#lesson-verdict'));
  }
  const score = async () => Number(await page.getAttribute('#lesson-score', 'data-value'));
  async function next(want) {
    await page.keyboard.press('ArrowRight');
    assert.equal(await step(), want);
  }

  test('six steps by keyboard, every number from the live model', { timeout: RUN_TIMEOUT }, async (t) => {
    // The benchmark panel set for something else: the Lesson's run must neither use nor change it.
    await page.check('input[name="split"][value="full"]');
    await page.check('#probe-layers');
    // Keyboard only: focus the Lesson button, open it with Enter. No model is loaded yet: the
    // first step loads the one picked in the model panel.
    await page.focus('#lesson-open');
    await page.keyboard.press('Enter');
    assert.equal(await page.isVisible('#lesson'), true);
    assert.equal(await step(), 1);
    assert.equal(await page.textContent('#lesson-count'), 'Step 1 of 6');
    await page.keyboard.press('ArrowLeft'); // nothing before the first step
    assert.equal(await step(), 1);

    // 1 · passive voice: high, rightly.
    await act();
    const passive = await score();
    assert.ok(Math.abs(passive - EXPECT.active_passive_cosine) <= 1e-4, `step 1: ${passive} vs CLI ${EXPECT.active_passive_cosine}`);
    assert.match(await page.textContent('#lesson-verdict'), /rightly/);

    // 2 · concept swap: high, wrongly.
    await next(2);
    await act();
    const swap = await score();
    const swapCli = cliCosine('Tom likes Taylor Swift.', 'Taylor Swift likes Tom.');
    assert.ok(Math.abs(swap - swapCli) <= 1e-4, `step 2: ${swap} vs CLI ${swapCli}`);
    assert.match(await page.textContent('#lesson-verdict'), /wrongly/);

    // 3 · why: the heat map's cells add up to the score.
    await next(3);
    await act();
    const cells = await page.$$eval('#lesson-map td.cell', (tds) => tds.map((td) => Number(td.dataset.value)));
    assert.ok(cells.length >= 16, `${cells.length} cells`);
    const sum = cells.reduce((s, v) => s + v, 0);
    assert.ok(Math.abs(sum - swap) <= 1e-4, `step 3: cells add up to ${sum}, the score is ${swap}`);
    assert.ok(Math.abs((await score()) - sum) <= 1e-5);

    // 4 · word salad: still high, equal to the CLI on the same shuffled text.
    await next(4);
    await act();
    const a = await page.textContent('#lesson-a');
    const salad = await page.getAttribute('#lesson', 'data-salad');
    assert.equal(await page.textContent('#lesson-b'), salad);
    assert.notEqual(salad, a, 'the salad is a new order');
    assert.deepEqual(words(salad), words(a), 'the same words');
    const saladCli = cliCosine(a, salad);
    assert.ok(Math.abs((await score()) - saladCli) <= 1e-4, `step 4: ${await score()} vs CLI ${saladCli}`);
    assert.ok(Number.isFinite(Number(await page.getAttribute('#lesson', 'data-mean'))));

    // 5 · the benchmark: the quick split, equal to the CLI's report.
    await next(5);
    await act(RUN_TIMEOUT);
    const figure = async (label) => Number(await page.getAttribute(`#lesson-bench data[data-figure="${label}"]`, 'value'));
    const cli = EXPECT.quick_report;
    for (const [label, want] of [['STS-B test', cli.stsb_test.spearman],
      ['SR structure', cli.results.structure.avg_spearman], ['SR relation', cli.results.relation.avg_spearman]]) {
      const got = await figure(label);
      assert.ok(Math.abs(got - want) <= 0.01, `step 5 ${label}: page ${got} vs CLI ${want}`);
    }
    assert.match(await page.textContent('#lesson-verdict'), /syntax-blind/);
    // The pairwise accuracy in a class's words, the CLI's figure per 100.
    const per100 = Math.round(cli.pairwise.all.accuracy);
    assert.match(await page.textContent('#lesson-verdict'),
      new RegExp(`picked the one that keeps the meaning in ${per100} of 100 cases .*a coin picks 50`));
    assert.match(await page.textContent('#lesson-verdict'), /on the quick split/);
    assert.equal(await page.isHidden('#probes'), true, 'no probe ran with the Lesson’s benchmark');
    assert.equal(await page.isChecked('input[name="split"][value="full"]'), true, 'the panel’s split is untouched');
    assert.equal(await page.isChecked('#probe-layers'), true, 'the panel’s probes are untouched');
    t.diagnostic(await page.textContent('#lesson-verdict'));
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: path.join(ARTIFACTS, 'lesson-benchmark.png') });
    // 6 · the class against the model: the quiz.
    await next(6);
    assert.equal(await page.textContent('#lesson-title'), 'You against the model');
    await page.keyboard.press('ArrowRight'); // nothing after the last step
    assert.equal(await step(), 6);

    // Back and out.
    await page.keyboard.press('ArrowLeft');
    assert.equal(await step(), 5);
    await page.keyboard.press('Escape');
    assert.equal(await page.isVisible('#lesson'), false);
    assert.equal(await page.evaluate(() => document.activeElement.id), 'lesson-open');

    // The last step's action leaves the lesson for the quiz, its questions drawn, its link shown.
    await page.keyboard.press('Enter');
    await page.keyboard.press('ArrowRight');
    assert.equal(await step(), 6);
    await page.keyboard.press('Enter');
    await page.waitForSelector('#quiz[data-state="asking"]', { timeout: 60_000 });
    assert.equal(await page.isVisible('#lesson'), false);
    assert.equal(await page.isVisible('#quiz-option-0'), true);
    assert.match(await page.getAttribute('#quiz-link', 'href'), /#.*quiz=\d+&qset=sr&qn=12/);
    await page.click('#quiz-close');
    assert.equal(await page.isVisible('#quiz'), false);
    assert.deepEqual(errors, [], 'console errors');
  });
});
