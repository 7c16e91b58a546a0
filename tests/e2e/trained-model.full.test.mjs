// A file made by `sr-bench train` in the page: MiniLM f32 trained a few steps on STS-B train,
// its q8_0 file dropped into the page as a file from this computer. It loads, scores the
// held-out SR file the CLI scores the same, and the compare table shows it beside the
// released model, named by its recipe (`all-MiniLM-L6-v2+stsb`). The local-file panel shows the
// recipe, and the lesson's benchmark step names it: first without a whole run of the released
// model in this tab (it says to run one), then beside that run's figures.
//
//   SR_BENCH_URL=http://127.0.0.1:PORT/ SR_BENCH_CLI=target/release/sr-bench \
//     node --test tests/e2e/trained-model.full.test.mjs

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import {
  ARTIFACTS, chooseData, cliJson, cliPath, dataValue, launchChromium, loadDefaultModel, openModelPanel, ROOT,
  RUN_TIMEOUT, runBenchmarkInPage, siteUrl, watchErrors,
} from './common.mjs';

const BASE = siteUrl();
const CLI = cliPath();

describe('a trained file in the page', () => {
  let browser;
  let page;
  let out;
  const errors = [];

  before(async () => {
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    out = fs.mkdtempSync(path.join(ARTIFACTS, 'trained-'));
    execFileSync(CLI, ['train', '--model', path.join(ROOT, 'www/models/all-MiniLM-L6-v2.f32.gguf'), '--train', 'stsb',
      '--epochs', '1', '--max-steps', '4', '--lr', '1e-4', '--seed', '2', '--out', out], { cwd: ROOT, stdio: 'ignore' });
    browser = await launchChromium();
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    watchErrors(context, errors);
    page = await context.newPage();
    await page.goto(BASE);
    await loadDefaultModel(page);
  });

  after(async () => {
    if (browser) await browser.close();
    if (out) fs.rmSync(out, { recursive: true, force: true });
  });

  test('loads as a file of ours and sits beside the original in the compare table', { timeout: 300_000 }, async () => {
    await chooseData(page, { files: ['biosses'], stsbTest: false });
    await runBenchmarkInPage(page, 'quick');
    await loadTrained();
    assert.match(await page.textContent('#model-active'), /all-MiniLM-L6-v2\+stsb · q8_0/);
    await runBenchmarkInPage(page, 'quick');
    const cli = cliJson(['eval', '--model', file(), '--split', 'quick', '--files', 'biosses', '--no-stsb-test']);
    for (const dim of ['structure', 'relation']) {
      const got = await dataValue(page, `[data-cell="${dim}-biosses"]`);
      assert.ok(Math.abs(got - cli.results[dim].biosses.spearman) <= 0.01, `${dim}: page ${got}, CLI ${cli.results[dim].biosses.spearman}`);
    }
    const models = await page.$$eval('#compare-body td[data-col="model"]', (tds) => tds.map((td) => td.textContent));
    assert.ok(models.includes('all-MiniLM-L6-v2') && models.includes('all-MiniLM-L6-v2+stsb'), `compare rows: ${models.join(', ')}`);
    assert.deepEqual(errors, []);
  });
  const file = () => path.join(out, 'all-MiniLM-L6-v2-stsb.q8_0.gguf');
  async function loadTrained() {
    await page.setInputFiles('#local-file', file());
    await page.waitForFunction(() => !document.getElementById('local-load').disabled, null, { timeout: 60_000 });
    await openModelPanel(page);
    await page.click('#local-load');
    await page.waitForFunction(() => document.body.dataset.model === 'ready' &&
      document.getElementById('model-active').textContent.includes('local file'), null, { timeout: 120_000 });
  }
  /** Opens the lesson, goes to its benchmark step (the one before the quiz), runs it, leaves;
   * the verdict. */
  async function lessonBenchmark() {
    await page.click('#lesson-open');
    while ((await page.textContent('#lesson-title')) !== 'The benchmark: syntax-blind') {
      assert.equal(await page.isDisabled('#lesson-next'), false, 'the lesson has a benchmark step');
      await page.click('#lesson-next');
    }
    await page.click('#lesson-go');
    await page.waitForFunction(() => ['ready', 'error'].includes(document.getElementById('lesson').dataset.state), null,
      { timeout: RUN_TIMEOUT });
    const verdict = await page.textContent('#lesson-verdict');
    assert.equal(await page.getAttribute('#lesson', 'data-state'), 'ready', verdict);
    const marks = await page.$eval('#lesson', (l) => ({ trained: l.dataset.trained, baseRun: l.dataset.baseRun }));
    await page.click('#lesson-close');
    return { verdict, ...marks };
  }

  test('the local panel and the lesson name the recipe, beside the released model’s run', { timeout: RUN_TIMEOUT }, async (t) => {
    // Still the trained file from the test above, whose last run was one SR file only: the
    // lesson runs the whole quick split rather than reuse it.
    const log = JSON.parse(fs.readFileSync(path.join(out, 'all-MiniLM-L6-v2-stsb.train-log.json'), 'utf8'));
    const kept = log.kept_epoch === 1 ? 'epoch 1 kept, best on STS-B dev' : 'no epoch beat the base model, so its weights were kept';
    assert.equal(await page.getAttribute('#local-info tr[data-field="trained"]', 'data-value'), 'stsb');
    assert.equal(await page.textContent('#local-info tr[data-field="trained"] td'),
      `fine-tuned on STS-B train (the control): ${log.pairs.toLocaleString('en-US')} pairs, 1 epoch, seed 2, ${kept}`);
    let lesson = await lessonBenchmark();
    assert.equal(lesson.trained, 'stsb');
    assert.equal(lesson.baseRun, undefined);
    assert.match(lesson.verdict, /This file was fine-tuned on STS-B train \(the control\)/);
    assert.match(lesson.verdict, /Run all-MiniLM-L6-v2 on the quick split too/);
    // The released model's whole run (the lesson's own), then the trained file's again.
    await openModelPanel(page);
    await page.click('#model-load');
    await page.waitForFunction(() => document.body.dataset.model === 'ready' &&
      !document.getElementById('model-active').textContent.includes('local file'), null, { timeout: 120_000 });
    lesson = await lessonBenchmark();
    assert.equal(lesson.trained, undefined, 'the released model is not a trained file');
    assert.doesNotMatch(lesson.verdict, /fine-tuned/);
    await loadTrained();
    lesson = await lessonBenchmark();
    t.diagnostic(lesson.verdict);
    assert.equal(lesson.trained, 'stsb');
    const row = await page.$eval(`#compare-body tr[data-run="${lesson.baseRun}"]`, (tr) => Object.fromEntries(
      [...tr.querySelectorAll('td[data-col]')].map((td) => [td.dataset.col, td.textContent])));
    assert.equal(row.model, 'all-MiniLM-L6-v2');
    assert.ok(lesson.verdict.includes(`all-MiniLM-L6-v2 itself (q8_0, run ${lesson.baseRun} in the compare table): ` +
      `ordinary similarity ${row.stsb_test_spearman}, syntax ${row.structure_avg}, relations ${row.relation_avg}.`), lesson.verdict);
    assert.deepEqual(errors, []);
  });
});
