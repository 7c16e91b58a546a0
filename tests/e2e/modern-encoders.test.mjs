// End-to-end test of the architectures beyond BERT in the page: the random nomic-bert,
// ModernBERT, Qwen3 and EmbeddingGemma checkpoints (build.sh fixtures: transformers'
// NomicBertModel, ModernBertModel, Qwen3Model and Gemma3TextModel converted by llama.cpp's
// converter) picked with the file input, as a user drops nomic-embed-text, modernbert-embed,
// Qwen3-Embedding or EmbeddingGemma: their info, a
// pair's cosine and the quick split equal the native CLI's on the same file. The f32 files: the page's 16-bit × q8_0 kernel
// and the CLI's f32 products of the same q8_0 weights differ by 2·10⁻⁵ in a cosine of this
// random checkpoint (its weights are ten times a trained model's scale) and by 0.02 in a quick
// split cell; the q8_0 file's parity in wasm is browser_llama's.
//
//   SR_BENCH_URL=http://127.0.0.1:PORT/  (the site, served by `sr-bench serve --dir www/dist`)
//   SR_BENCH_CLI=path/to/sr-bench        (the figures the page must show, on the same file)
//   node --test tests/e2e/modern-encoders.test.mjs

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import {
  ACTIVE, askToSaveData, chooseData, cliJson, cliPath, dataValue, DIMS, FILES, launchChromium, openModelPanel,
  PASSIVE, ROOT, RUN_TIMEOUT, scorePair, siteUrl, watchErrors,
} from './common.mjs';

const BASE = siteUrl();
const CLI = cliPath();
/** What each file's info panel must say, beyond its f32 type and 128 dimensions. */
const ENCODERS = [
  { architecture: 'nomic-bert', layers: '3', positions: '2048' },
  { architecture: 'modern-bert', layers: '4', positions: '1024' },
  // Decoders: causal attention, grouped-query heads, last-token pooling (Qwen2's Q/K/V with
  // biases, Qwen3's with per-head norms).
  { architecture: 'qwen2', layers: '3', positions: '2048' },
  { architecture: 'qwen3', layers: '3', positions: '2048' },
  // Gemma 3 blocks read both ways, a SentencePiece vocabulary, a Dense head after the pooling.
  { architecture: 'gemma-embedding', layers: '6', positions: '2048' },
  // T5's encoder: no position table (relative-position buckets), a Unigram vocabulary.
  { architecture: 't5encoder', layers: '3', positions: '512' },
];

for (const { architecture, layers, positions } of ENCODERS) {
  const FILE = path.join(ROOT, `tests/artifacts/llama/${architecture}.f32.gguf`);
  if (!fs.existsSync(FILE)) throw new Error(`${FILE} is missing: run ./build.sh fixtures`);

  describe(`a ${architecture} file from this computer`, () => {
    /** @type {import('playwright-core').Browser} */
    let browser;
    /** @type {import('playwright-core').Page} */
    let page;
    const errors = [];
    const infoValue = (field) => page.getAttribute(`#local-info-body tr[data-field="${field}"]`, 'data-value');

    before(async () => {
      browser = await launchChromium();
      const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
      await askToSaveData(context); // only the test's own file loads
      watchErrors(context, errors);
      page = await context.newPage();
      await page.goto(BASE);
      await page.waitForSelector('#model-select:not([disabled])', { state: 'attached' });
    });

    after(async () => {
      if (browser) await browser.close();
    });

    test('picked with the file input: the page describes it, then loads it', { timeout: 180_000 }, async () => {
      await page.setInputFiles('#local-file', FILE);
      await page.waitForFunction(() => !document.getElementById('local-load').disabled, null, { timeout: 60_000 });
      assert.equal(await infoValue('architecture'), architecture);
      assert.equal(await infoValue('dtype'), 'f32');
      assert.equal(await infoValue('dim'), '128');
      assert.equal(await infoValue('num_layers'), layers);
      assert.equal(await infoValue('max_seq_length'), positions, 'the file\'s context length');
      await openModelPanel(page);
      await page.click('#local-load');
      await page.waitForFunction(() => document.body.dataset.model === 'ready' &&
        document.getElementById('model-active').textContent.includes('local file'), null, { timeout: 180_000 });
      assert.match(await page.textContent('#model-status'), new RegExp(`local file ${architecture}\\.f32\\.gguf`));
    });

    test('a pair\'s cosine equals the CLI\'s on the same file', { timeout: 120_000 }, async (t) => {
      const page_ = await scorePair(page, ACTIVE, PASSIVE);
      const cli = Number(execFileSync(CLI, ['similarity', '--model', FILE, ACTIVE, PASSIVE], { encoding: 'utf8' }));
      assert.ok(Math.abs(page_ - cli) <= 1e-5, `browser ${page_} vs CLI ${cli}`);
      t.diagnostic(`${architecture} f32, active/passive: browser ${page_}, CLI ${cli}`);
    });

    // llama.cpp's files keep no prompt: the page offers the model card's similarity instruction
    // where it knows one (EmbeddingGemma's), and the cosine is then the CLI's with --prefix.
    test('the model card\'s instruction is one click away where the card names one', { timeout: 120_000 }, async (t) => {
      assert.equal(await page.inputValue('#model-prefix'), '', 'the file carries no prompt');
      const offered = await page.isVisible('#prefix-card');
      assert.equal(offered, architecture === 'gemma-embedding', `the card's button for ${architecture}`);
      if (!offered) return;
      const card = 'task: sentence similarity | query: ';
      await openModelPanel(page);
      await page.click('#prefix-card');
      await page.waitForFunction(() => /Prefix: “task: sentence similarity \| query: ” \(yours/.test(
        document.getElementById('prefix-hint').textContent), null, { timeout: 30_000 });
      await page.waitForSelector('#score-model[data-state="ready"]', { timeout: 60_000 });
      const prompted = await dataValue(page, '#score-model');
      const cli = Number(execFileSync(CLI, ['similarity', '--model', FILE, '--prefix', card, ACTIVE, PASSIVE],
        { encoding: 'utf8' }));
      assert.ok(Math.abs(prompted - cli) <= 1e-5, `with the card's instruction: browser ${prompted} vs CLI ${cli}`);
      t.diagnostic(`${architecture} f32 with "${card}": browser ${prompted}, CLI ${cli}`);
      await openModelPanel(page);
      await page.click('#prefix-reset');
      await page.waitForFunction(() => /Prefix: none \(the file’s\)/.test(
        document.getElementById('prefix-hint').textContent), null, { timeout: 30_000 });
      await page.waitForSelector('#score-model[data-state="ready"]', { timeout: 60_000 });
    });

    test('the quick split equals `sr-bench eval --split quick --no-stsb-test` cell by cell', { timeout: RUN_TIMEOUT }, async (t) => {
      await page.check('input[name="split"][value="quick"]');
      await chooseData(page, { stsbTest: false });
      await page.selectOption('#encoder', 'model');
      const t0 = Date.now();
      await page.click('#run');
      await page.waitForFunction(() => document.body.dataset.run === 'idle' &&
        /^Done/.test(document.getElementById('run-msg').textContent), null, { timeout: RUN_TIMEOUT });
      const ms = Date.now() - t0;
      const cli = cliJson(['eval', '--model', FILE, '--split', 'quick', '--no-stsb-test']);
      let worst = 0;
      for (const dim of DIMS) {
        for (const f of [...FILES, 'avg']) {
          const got = await dataValue(page, `[data-cell="${dim}-${f}"]`);
          const want = f === 'avg' ? cli.results[dim].avg_spearman : cli.results[dim][f].spearman;
          assert.ok(Math.abs(got - want) <= 0.01, `${dim}/${f}: browser ${got} vs CLI ${want}`);
          worst = Math.max(worst, Math.abs(got - want));
        }
      }
      t.diagnostic(`${architecture} f32 quick split in the page: ${ms} ms; max |Δ| vs the CLI ${worst.toFixed(3)}; ` +
        (await page.textContent('#run-msg')));
      assert.match(await page.textContent('#run-msg'), /[0-9.]+ GFLOP\/s/, 'the run\'s GFLOP/s');
      assert.deepEqual(errors, []);
    });
  });
}
