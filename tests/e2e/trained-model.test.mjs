// A file made by `sr-bench train` in the page: MiniLM f32 trained a few steps on STS-B train,
// its q8_0 file dropped into the page as a file from this computer. It loads, scores the
// held-out SR file the CLI scores the same, and the compare table shows it beside the
// released model, named by its recipe (`all-MiniLM-L6-v2+stsb`).
//
//   SR_BENCH_URL=http://127.0.0.1:PORT/ SR_BENCH_CLI=target/release/sr-bench \
//     node --test tests/e2e/trained-model.test.mjs

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import {
  ARTIFACTS, ROOT, chooseData, cliJson, cliPath, dataValue, launchChromium, loadDefaultModel, runBenchmarkInPage,
  siteUrl, watchErrors,
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
    const file = path.join(out, 'all-MiniLM-L6-v2-stsb.q8_0.gguf');
    await page.setInputFiles('#local-file', file);
    await page.waitForFunction(() => !document.getElementById('local-load').disabled, null, { timeout: 60_000 });
    await page.click('#local-load');
    await page.waitForFunction(() => document.body.dataset.model === 'ready' &&
      document.getElementById('model-active').textContent.includes('local file'), null, { timeout: 120_000 });
    assert.match(await page.textContent('#model-active'), /all-MiniLM-L6-v2\+stsb · q8_0/);
    await runBenchmarkInPage(page, 'quick');
    const cli = cliJson(['eval', '--model', file, '--split', 'quick', '--files', 'biosses', '--no-stsb-test']);
    for (const dim of ['structure', 'relation']) {
      const got = await dataValue(page, `[data-cell="${dim}-biosses"]`);
      assert.ok(Math.abs(got - cli.results[dim].biosses.spearman) <= 0.01, `${dim}: page ${got}, CLI ${cli.results[dim].biosses.spearman}`);
    }
    const models = await page.$$eval('#compare-body td[data-col="model"]', (tds) => tds.map((td) => td.textContent));
    assert.ok(models.includes('all-MiniLM-L6-v2') && models.includes('all-MiniLM-L6-v2+stsb'), `compare rows: ${models.join(', ')}`);
    assert.deepEqual(errors, []);
  });
});
