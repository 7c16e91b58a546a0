// End-to-end test of "your own pairs" in the benchmark panel: a CSV in the STS layout and a TSV
// in the SR files' layout (tests/fixtures/own-pairs/, pairs of our own) picked with the file
// input give the figures of `sr-bench eval --pairs FILE` on the same model (±0.01 for the ×100
// correlations, ±0.0001 for MSE/RMSE), in the results, the scatter and the JSON export; bad
// files (wrong columns, a non-numeric score, an empty file, a binary file, a 50 MB file) each
// get a message that says what is wrong and where, and the page keeps working.
//
//   SR_BENCH_URL=http://127.0.0.1:PORT/  (the site, served by `sr-bench serve --dir www/dist`)
//   SR_BENCH_CLI=path/to/sr-bench        (the figures the page must show, on the same file)
//   node --test tests/e2e/own-pairs.test.mjs

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import {
  ACTIVE, ARTIFACTS, PASSIVE, ROOT, cliJson, cliPath, dataValue, launchChromium, loadDefaultModel, scorePair, siteUrl, watchErrors,
} from './common.mjs';

const BASE = siteUrl();
const MODEL = path.join(ROOT, 'www/models/all-MiniLM-L6-v2.q8_0.gguf');
const FIXTURES = path.join(ROOT, 'tests/fixtures/own-pairs');
const COLUMNS = ['n', 'spearman', 'pearson', 'mse', 'rmse'];

describe('your own pairs in the page', () => {
  /** @type {import('playwright-core').Browser} */
  let browser;
  /** @type {import('playwright-core').Page} */
  let page;
  const errors = [];

  before(async () => {
    browser = await launchChromium();
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
    watchErrors(context, errors);
    page = await context.newPage();
    await page.goto(BASE);
    await loadDefaultModel(page);
  });

  after(async () => {
    if (browser) await browser.close();
  });

  /** Picks `file`, presses Run and waits for the run's last word; [level, message]. */
  async function run(file) {
    await page.setInputFiles('#own-pairs-file', file);
    await page.click('#run');
    await page.waitForFunction(() => document.body.dataset.run === 'idle' &&
      !/^Running /.test(document.getElementById('run-msg').textContent), null, { timeout: 120_000 });
    return [await page.getAttribute('#run-msg', 'data-level'), await page.textContent('#run-msg')];
  }

  /** The run's JSON export. */
  async function exported() {
    const [dl] = await Promise.all([page.waitForEvent('download'), page.click('#export-json')]);
    return JSON.parse(fs.readFileSync(await dl.path(), 'utf8'));
  }

  /** The page's table against `sr-bench eval --pairs`: n exactly; Spearman, MSE and RMSE within
   * ±0.01 / ±0.0001; Pearson within ±0.01, or, where a row's cosines barely vary, within what the
   * page's and the CLI's cosines (equal within 1e-4, checked) allow: |Δr| ≤ 2·max|Δcos| / sd(cos). */
  async function assertTableIsTheCli(file, rows) {
    const want = cliJson(['eval', '--model', MODEL, '--pairs', file]).own_pairs;
    const pairs = (await exported()).pairs.filter((p) => p.file === 'own_pairs');
    const texts = [...new Set(pairs.flatMap((p) => [p.sentence1, p.sentence2]))];
    const vectors = JSON.parse(execFileSync(cliPath(), ['embed', '--model', MODEL], { input: JSON.stringify(texts), maxBuffer: 64 << 20 }));
    const of = new Map(texts.map((t, i) => [t, vectors[i]]));
    const cliCosine = (p) => of.get(p.sentence1).reduce((s, x, i) => s + x * of.get(p.sentence2)[i], 0);
    const drift = Math.max(...pairs.map((p) => Math.abs(p.cosine - cliCosine(p))));
    assert.ok(drift <= 1e-4, `page and CLI cosines differ by up to ${drift}`); // the playground's bound (demo.test.mjs)
    assert.equal(await page.textContent('#own-title'), `Your own pairs: ${path.basename(file)}`);
    for (const row of rows) {
      for (const c of COLUMNS) {
        const got = await dataValue(page, `#own-body tr[data-row="${row}"] td[data-key="${c}"]`);
        const cos = pairs.filter((p) => p.dimension === row).map((p) => p.cosine);
        const mean = cos.reduce((a, b) => a + b, 0) / cos.length;
        const sd = Math.sqrt(cos.reduce((a, b) => a + (b - mean) ** 2, 0) / cos.length);
        const tolerance = c === 'n' ? 0 : c === 'spearman' ? 0.01 : c === 'pearson' ? Math.max(0.01, (100 * 2 * drift) / sd) : 1e-4;
        assert.ok(Math.abs(got - want[row][c]) <= tolerance, `${row} ${c}: page ${got}, CLI ${want[row][c]}`);
      }
    }
    return want;
  }

  test('an STS-layout CSV: the table, the scatter and the export are the CLI\'s', { timeout: 180_000 }, async () => {
    const file = path.join(FIXTURES, 'sts.csv');
    const [level, msg] = await run(file);
    assert.equal(level, 'info', msg);
    const want = await assertTableIsTheCli(file, ['similarity']);
    assert.equal(await page.inputValue('#plot-file'), 'own_pairs');
    assert.match(await page.getAttribute('#scatter', 'aria-label'), /own_pairs · similarity · 30 pairs/);
    const json = await exported();
    assert.equal(json.own_pairs.similarity.spearman, await dataValue(page, '#own-body tr[data-row="similarity"] td[data-key="spearman"]'));
    assert.ok(Math.abs(json.own_pairs.similarity.spearman - want.similarity.spearman) <= 0.01);
    assert.equal(json.own_pairs.layout, 'sts');
    // The compare table has the run, with its data and Spearman.
    const spearman = await dataValue(page, '#compare-body td[data-col="data"][data-value="own pairs: sts.csv"] ~ td[data-col="own_pairs_spearman"]');
    assert.equal(spearman, want.similarity.spearman);
  });

  test('an SR-layout TSV: one row per dimension, as the CLI', { timeout: 180_000 }, async () => {
    const [level, msg] = await run(path.join(FIXTURES, 'sr.tsv'));
    assert.equal(level, 'info', msg);
    await assertTableIsTheCli(path.join(FIXTURES, 'sr.tsv'), ['structure', 'relation']);
  });

  test('bad files get a clear message each, and the page keeps working', { timeout: 300_000 }, async () => {
    const dir = fs.mkdtempSync(path.join(ARTIFACTS, 'own-pairs-'));
    const write = (name, bytes) => {
      const p = path.join(dir, name);
      fs.writeFileSync(p, bytes);
      return p;
    };
    const cases = [
      [write('columns.csv', 'sentence1,sentence2\nA,B\n'), /line 1: expected the header 'sentence1,sentence2,score'.*found 2 columns/],
      [write('score.csv', 'sentence1,sentence2,score\nA dog.,A cat.,3\nA man.,A woman.,high\n'), /'score\.csv' line 3, column 3 \(score\): 'high' is not a number/],
      [write('empty.csv', ''), /'empty\.csv': empty file/],
      [write('binary.csv', Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 151 + 7) % 256))), /'binary\.csv' is not a (UTF-8 )?text file/],
      [write('rows.tsv', 'sentence1\tsentence2\tscore\nA\tB\t1\nC\tD\n'), /'rows\.tsv' line 3: expected 3 tab-separated columns/],
    ];
    try {
      for (const [file, message] of cases) {
        const [level, msg] = await run(file);
        assert.equal(level, 'error', `${path.basename(file)}: ${msg}`);
        assert.match(msg, message);
      }
      // 50 MB: refused as it is picked, before anything reads it.
      const big = path.join(dir, 'big.csv');
      fs.writeFileSync(big, Buffer.alloc(50_000_000, 'a'));
      await page.setInputFiles('#own-pairs-file', big);
      assert.match(await page.textContent('#own-pairs-status'), /'big\.csv' is 50(\.0)? MB; a pairs file may be at most 16 MB/);
      assert.equal(await page.getAttribute('#own-pairs-status', 'data-level'), 'error');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
    // Still working: the playground scores a pair, and a good file runs again.
    const cosine = await scorePair(page, ACTIVE, PASSIVE);
    assert.ok(cosine > 0.5 && cosine <= 1, `${cosine}`);
    const [level, msg] = await run(path.join(FIXTURES, 'sts.csv'));
    assert.equal(level, 'info', msg);
    await page.click('#own-pairs-clear');
    assert.equal(await page.inputValue('#own-pairs-file'), '');
    assert.deepEqual(errors, []);
  });
});
