// End-to-end test of the multilingual model in the page: multilingual-e5-small from the picker,
// its text prefix ("query: ", the file's) shown and changed in the model panel, and Czech News
// STS in the benchmark panel: the model's and the syntax-blind baseline's figures beside the
// random annotator and the oracle bound equal `sr-bench eval-czech` on the same file (±0.01 for
// the ×100 correlations, ±0.0001 for the MSEs), with and without the prefix.
//
//   SR_BENCH_URL=http://127.0.0.1:PORT/  (the site, served by `sr-bench serve --dir www/dist`)
//   SR_BENCH_CLI=path/to/sr-bench        (the figures the page must show, on the same file)
//   node --test tests/e2e/multilingual.test.mjs

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import {
  askToSaveData, cliJson, cliPath, dataValue, launchChromium, openModelPanel, ROOT, scorePair, siteUrl,
  watchErrors,
} from './common.mjs';

const BASE = siteUrl();
const CLI = cliPath();
const MODEL = path.join(ROOT, 'www/models/multilingual-e5-small.q4_0.gguf');
// Czech word order: case endings carry the roles, so these two mean the same.
const A = 'Petr miluje Marii.';
const B = 'Marii miluje Petr.';
const COLUMNS = ['pearson', 'spearman', 'mse_unit', 'rmse_unit', 'mse_raw', 'rmse_raw'];

function cliCosine(prefix, a = A, b = B) {
  const out = execFileSync(CLI, ['similarity', '--model', MODEL, '--prefix', prefix, a, b], { cwd: ROOT, encoding: 'utf8' });
  return Number(out.trim());
}

describe('multilingual-e5-small in the page', () => {
  /** @type {import('playwright-core').Browser} */
  let browser;
  /** @type {import('playwright-core').Page} */
  let page;
  const errors = [];

  before(async () => {
    browser = await launchChromium();
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await askToSaveData(context); // e5 is picked before anything loads
    watchErrors(context, errors);
    page = await context.newPage();
    await page.goto(BASE);
    await page.waitForSelector('#model-select:not([disabled])', { state: 'attached' });
    await openModelPanel(page);
    await page.selectOption('#model-select', 'multilingual-e5-small@q4_0');
    await page.click('#model-load');
    await page.waitForFunction(() => document.body.dataset.model === 'ready' &&
      document.getElementById('model-active').textContent.includes('multilingual-e5-small'), null, { timeout: 300_000 });
  });

  after(async () => {
    if (browser) await browser.close();
  });

  test('the prefix field shows the file\'s "query: ", and changing it changes the score as the CLI\'s --prefix does', { timeout: 180_000 }, async () => {
    assert.equal(await page.inputValue('#model-prefix'), 'query: ');
    assert.match(await page.textContent('#prefix-hint'), /“query: ” \(the file’s\)/);
    const withPrefix = await scorePair(page, A, B);
    const cliWith = cliCosine('query: ');
    assert.ok(Math.abs(withPrefix - cliWith) <= 1e-4, `with the prefix: page ${withPrefix}, CLI ${cliWith}`);

    await openModelPanel(page);
    await page.fill('#model-prefix', '');
    await page.click('#prefix-apply');
    await page.waitForFunction(() => /Prefix: none/.test(document.getElementById('prefix-hint').textContent), null, { timeout: 30_000 });
    await page.waitForSelector('#score-model[data-state="ready"]', { timeout: 60_000 });
    const without = await dataValue(page, '#score-model');
    const cliWithout = cliCosine('');
    assert.ok(Math.abs(without - cliWithout) <= 1e-4, `without: page ${without}, CLI ${cliWithout}`);
    assert.ok(Math.abs(without - withPrefix) > 1e-4, `the prefix changes the cosine (${withPrefix} vs ${without})`);

    // A two-line instruction (Qwen3-Embedding's layout), typed with \n for the newline: the
    // model reads a real newline, as the CLI's --prefix given one.
    const instruction = 'Instruct: Retrieve semantically similar text.\nQuery: ';
    await openModelPanel(page);
    await page.fill('#model-prefix', instruction.replace('\n', '\\n'));
    await page.click('#prefix-apply');
    await page.waitForFunction(() => /Prefix: “Instruct: .*\\nQuery: ” \(yours/.test(document.getElementById('prefix-hint').textContent), null, { timeout: 30_000 });
    await page.waitForSelector('#score-model[data-state="ready"]', { timeout: 60_000 });
    const instructed = await dataValue(page, '#score-model');
    const cliInstructed = cliCosine(instruction);
    assert.ok(Math.abs(instructed - cliInstructed) <= 1e-4, `with the instruction: page ${instructed}, CLI ${cliInstructed}`);
    assert.ok(Math.abs(cliInstructed - cliCosine(instruction.replace('\n', '\\n'))) > 1e-6,
      'the CLI reads a newline, not a backslash and an n');
    assert.equal(await page.inputValue('#model-prefix'), instruction.replace('\n', '\\n'));

    await openModelPanel(page);
    await page.click('#prefix-reset');
    await page.waitForFunction(() => /the file’s\)/.test(document.getElementById('prefix-hint').textContent), null, { timeout: 30_000 });
    assert.equal(await page.inputValue('#model-prefix'), 'query: ');
    assert.deepEqual(errors, []);
  });

  test('the lesson has its Czech step: the model\'s cosines are the CLI\'s, the map is drawn', { timeout: 120_000 }, async () => {
    await page.click('#lesson-open');
    for (let i = 0; i < 4; i++) await page.click('#lesson-next');
    assert.equal(await page.textContent('#lesson-count'), 'Step 5 of 7');
    assert.equal(await page.textContent('#lesson-title'), 'Word order in Czech');
    await page.click('#lesson-go');
    await page.waitForFunction(() => document.getElementById('lesson').dataset.state === 'ready', null, { timeout: 60_000 });
    const same = Number(await page.getAttribute('#lesson', 'data-czech-same'));
    const reversed = Number(await page.getAttribute('#lesson', 'data-czech-reversed'));
    assert.ok(Math.abs(same - cliCosine('query: ', A, 'Marii miluje Petr.')) <= 1e-4, `same meaning: ${same}`);
    assert.ok(Math.abs(reversed - cliCosine('query: ', A, 'Petra miluje Marie.')) <= 1e-4, `roles reversed: ${reversed}`);
    assert.match(await page.textContent('#lesson-verdict'), /Same meaning, new order: \d\.\d{3}\. Roles reversed by the endings: \d\.\d{3}/);
    assert.equal(await page.getAttribute('#lesson-map figure.heatmap', 'data-encoder'), 'model');
    await page.click('#lesson-close');
  });

  test('the quiz asks Czech pairs of a multilingual model; its answers are the CLI\'s', { timeout: 180_000 }, async () => {
    await page.click('#quiz-open');
    await page.waitForSelector('#quiz[data-state="asking"]', { timeout: 60_000 });
    assert.equal(await page.getAttribute('#quiz', 'data-set'), 'czech', 'Czech pairs for a model that reads Czech');
    const seed = await page.getAttribute('#quiz', 'data-seed');
    const cli = JSON.parse(execFileSync(CLI, ['quiz', '--set', 'czech', '--seed', seed, '--data', path.join(ROOT, 'www/dist/data'),
      '--model', MODEL], { cwd: ROOT, encoding: 'utf8' }));
    for (let i = 0; i < cli.questions.length; i++) {
      await page.waitForSelector(`#quiz-question[data-index="${i}"]:not([hidden])`);
      const o = cli.questions[i].options;
      assert.equal(await page.getAttribute('#quiz-question', 'data-line'), `${o[0].line},${o[1].line}`);
      assert.equal(await page.isVisible('#quiz-original-line'), false, 'no original: two pairs');
      assert.equal(await page.textContent('#quiz-option-0'), `${o[0].a}${o[0].b}`);
      await page.click('#quiz-option-0');
    }
    await page.waitForSelector('#quiz[data-state="done"]', { timeout: 120_000 });
    assert.equal(Number(await page.getAttribute('#quiz-model', 'data-correct')), cli.model.accuracy.correct);
    assert.equal(Number(await page.getAttribute('#quiz-baseline', 'data-correct')), cli.baseline.accuracy.correct);
    assert.equal(Number(await page.getAttribute('#quiz-person', 'data-correct')), cli.questions.filter((q) => q.answer === 0).length);
    await page.click('#quiz-close');
  });

  test('Czech News STS: the page\'s table is the CLI\'s eval-czech, the baseline\'s and the human rows too', { timeout: 600_000 }, async () => {
    const model = cliJson(['eval-czech', '--model', MODEL]).czech_news_sts;
    const baseline = cliJson(['eval-czech', '--model', MODEL, '--baseline', 'static']).czech_news_sts;
    for (const f of ['stsb', 'sickr', 'askubuntu', 'cqa', 'twitter', 'biosses']) await page.setChecked(`input[name="sr-file"][value="${f}"]`, false);
    await page.setChecked('#bench-stsb-test', false);
    await page.setChecked('#bench-czech', true);
    await page.click('#run');
    await page.waitForFunction(() => document.body.dataset.run === 'idle' &&
      !/^Running /.test(document.getElementById('run-msg').textContent), null, { timeout: 540_000 });
    assert.equal(await page.getAttribute('#run-msg', 'data-level'), 'info', await page.textContent('#run-msg'));
    assert.equal(await page.isVisible('#czech-results'), true);
    const rows = { model: model.model, baseline: baseline.model, 'random-human': model.random_human, oracle: model.oracle };
    for (const [row, want] of Object.entries(rows)) {
      for (const c of COLUMNS) {
        if (want[c] === undefined) continue;
        const got = await dataValue(page, `#czech-body tr[data-row="${row}"] td[data-key="${c}"]`);
        const tolerance = c === 'pearson' || c === 'spearman' ? 0.01 : 1e-4;
        assert.ok(Math.abs(got - want[c]) <= tolerance, `${row} ${c}: page ${got}, CLI ${want[c]}`);
      }
    }
    const finding = await page.textContent('#czech-finding');
    const beats = model.model.pearson > model.random_human.pearson && model.model.spearman > model.random_human.spearman;
    assert.match(finding, beats ? /better than a random Czech annotator/ : /does not reach|level/);
    assert.match(await page.textContent('#results-caption'), /prefix “query: ”/);
    assert.deepEqual(errors, []);
  });
});
