// E2E: the playground's explainers against the CLI and the Rust word functions.
//
//   SR_BENCH_URL=http://127.0.0.1:PORT/   the built site (`sr-bench serve --dir www/dist`)
//   SR_BENCH_CLI=path/to/sr-bench         the native CLI: `explain --json` and `similarity` are the reference
//   node --test tests/e2e/explain.test.mjs
//
// The model files are the site's own (www/models, the same bytes the page downloads).
// Tolerances: 1e-5 absolute for the maps against `sr-bench explain --json` (f32 wasm vs native
// SIMD sums); 1e-4 for a page cosine against `sr-bench similarity` (q8_0 kernels differ between
// wasm and native, as in demo.test.mjs); the word edits must be identical strings.

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  askToSaveData, cliPath, dataValue, launchChromium, openModelPanel, siteUrl, typePair, waitModelReady,
} from './common.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const MODELS = path.join(ROOT, 'www', 'models');
const TOL = 1e-5;
const SIMILARITY_TOL = 1e-4;
const A = 'Tom likes Taylor Swift.';
const B = 'Taylor Swift likes Tom.';
// Word pieces: "unbelievably" and "tokenizer" are several pieces each in MiniLM's vocabulary.
const PIECES_A = 'Unbelievably, the tokenizer fragments words.';
const PIECES_B = 'The tokenizer fragments words unbelievably.';

const BASE = siteUrl();
const CLI = cliPath();

const cli = (...args) => execFileSync(CLI, args, { encoding: 'utf8' });
const cliExplain = (file, a, b, ...flags) => JSON.parse(cli('explain', '--model', path.join(MODELS, file), a, b, '--json', ...flags));

/** Rust's word functions, from the same wasm package the page runs (www/pkg). */
async function wasmWords() {
  const pkg = path.join(ROOT, 'www', 'pkg');
  const wasm = await import(path.join(pkg, 'sr_bench.js'));
  await wasm.default({ module_or_path: readFileSync(path.join(pkg, 'sr_bench_bg.wasm')) });
  return wasm;
}

/** The heat map in `box` as drawn: tokens, every cell's data-value, the totals. */
function readMap(page, box) {
  return page.$eval(box, (root) => {
    const fig = root.querySelector('figure.heatmap');
    const num = (e) => Number(e.dataset.value);
    const rows = Number(fig.dataset.rows);
    const cols = Number(fig.dataset.cols);
    const cells = Array.from({ length: rows }, () => new Array(cols).fill(NaN));
    for (const td of fig.querySelectorAll('td.cell')) cells[Number(td.dataset.i)][Number(td.dataset.j)] = num(td);
    const total = fig.querySelector('td.grand-total');
    return {
      kind: fig.dataset.kind,
      grouped: fig.dataset.grouped === 'true',
      tokens_a: [...fig.querySelectorAll('th.row-token')].map((e) => e.textContent),
      tokens_b: [...fig.querySelectorAll('th.col-token')].map((e) => e.textContent),
      contributions: cells,
      row_totals: [...fig.querySelectorAll('td.row-total')].map(num),
      column_totals: [...fig.querySelectorAll('td.column-total')].map(num),
      total: total ? num(total) : NaN,
      caption: fig.querySelector('figcaption').textContent,
    };
  });
}

function assertClose(actual, expected, what, tol = TOL) {
  assert.ok(Math.abs(actual - expected) <= tol, `${what}: page ${actual} vs CLI ${expected} (tolerance ${tol})`);
}

/** The drawn map equals the CLI's (tokens exactly, numbers within TOL). */
function assertSameMap(drawn, expected, what) {
  assert.deepEqual(drawn.tokens_a, expected.tokens_a, `${what}: A's tokens`);
  assert.deepEqual(drawn.tokens_b, expected.tokens_b, `${what}: B's tokens`);
  assert.equal(drawn.kind, expected.kind, `${what}: kind`);
  expected.contributions.forEach((row, i) => row.forEach((v, j) => assertClose(drawn.contributions[i][j], v, `${what} cell [${i}][${j}]`)));
  if (expected.kind === 'contributions') {
    expected.row_totals.forEach((v, i) => assertClose(drawn.row_totals[i], v, `${what} row total ${i}`));
    expected.column_totals.forEach((v, j) => assertClose(drawn.column_totals[j], v, `${what} column total ${j}`));
    assertClose(drawn.total, expected.total, `${what} grand total`);
  }
}

describe('the playground explainers (heat maps, word order, layers)', () => {
  /** @type {import('playwright-core').Browser} */
  let browser;
  /** @type {import('playwright-core').Page} */
  let page;
  let wasm;
  const errors = [];

  async function explainPair(a, b) {
    await typePair(page, a, b);
    assert.equal(await page.getAttribute('#score-model', 'data-state'), 'ready', 'the pair is scored');
    await page.waitForSelector('#explain[data-state="ready"]', { timeout: 60_000 });
  }

  /** Waits for box B to hold something other than `old` (a word-order button's answer). */
  async function newB(old) {
    await page.waitForFunction((o) => document.getElementById('text-b').value !== o, old, { timeout: 30_000 });
    return page.inputValue('#text-b');
  }

  before(async () => {
    wasm = await wasmWords();
    browser = await launchChromium();
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await askToSaveData(context); // the test presses Load itself
    context.on('weberror', (e) => errors.push(`pageerror: ${e.error().message}`));
    context.on('console', (m) => { if (m.type() === 'error') errors.push(`console: ${m.text()}`); });
    page = await context.newPage();
    await page.goto(BASE);
    await page.waitForSelector('#model-select:not([disabled])', { state: 'attached' });
    assert.match(await page.inputValue('#model-select'), /^all-MiniLM-L6-v2@q8_0$/, 'MiniLM q8_0 is the default');
    await openModelPanel(page);
    await page.click('#model-load');
    await waitModelReady(page, 'q8_0');
  });

  after(async () => {
    if (browser) await browser.close();
    assert.deepEqual(errors, [], 'no page errors');
  });

  test('the heat maps equal `sr-bench explain --json`; the grand total is the displayed cosine', { timeout: 120_000 }, async () => {
    await explainPair(A, B);
    const file = 'all-MiniLM-L6-v2.q8_0.gguf';
    const model = await readMap(page, '#heatmap-model');
    assertSameMap(model, cliExplain(file, A, B), 'model map');
    assertClose(model.total, await dataValue(page, '#score-model'), 'grand total vs the displayed cosine');
    const baseline = await readMap(page, '#heatmap-static');
    assertSameMap(baseline, cliExplain(file, A, B, '--static'), 'baseline map');
    assertClose(baseline.total, await dataValue(page, '#score-static'), 'baseline total vs the displayed baseline cosine');
    // Pointing at a cell names both tokens and gives the exact value.
    await page.hover('#heatmap-model td.cell[data-i="1"][data-j="4"]');
    assert.equal(await page.textContent('#heatmap-model .heatmap-hover'), `tom × tom: ${model.contributions[1][4]}`);
  });

  test('grouping word pieces into words keeps the total and equals the CLI\'s grouped map', { timeout: 120_000 }, async () => {
    await explainPair(PIECES_A, PIECES_B);
    const cliMap = cliExplain('all-MiniLM-L6-v2.q8_0.gguf', PIECES_A, PIECES_B);
    assert.ok(cliMap.tokens_a.length > cliMap.words.tokens_a.length, 'the example has word pieces');
    const pieces = await readMap(page, '#heatmap-model');
    await page.check('#explain-words');
    const words = await readMap(page, '#heatmap-model');
    assert.ok(words.grouped, 'the grouped map is shown');
    assertSameMap(words, cliMap.words, 'grouped model map');
    assertClose(words.total, pieces.total, 'grouping keeps the total');
    assertSameMap(await readMap(page, '#heatmap-static'), cliExplain('all-MiniLM-L6-v2.q8_0.gguf', PIECES_A, PIECES_B, '--static').words, 'grouped baseline map');
    await page.uncheck('#explain-words');
  });

  test('the baseline map of a permutation of A has A\'s rows, permuted', { timeout: 120_000 }, async () => {
    await explainPair(A, B);
    const original = await readMap(page, '#heatmap-static');
    await explainPair(B, B); // rows: B's words, a permutation of A's; columns unchanged
    const permuted = await readMap(page, '#heatmap-static');
    assert.equal(permuted.tokens_a.length, original.tokens_a.length);
    permuted.tokens_a.forEach((t, i) => {
      const k = original.tokens_a.indexOf(t);
      assert.ok(k >= 0, `${t} is one of A's tokens`);
      permuted.contributions[i].forEach((v, j) => assert.ok(Math.abs(v - original.contributions[k][j]) <= 1e-12,
        `row of ${t}, column ${j}: ${v} vs ${original.contributions[k][j]}`));
    });
    const model = await readMap(page, '#heatmap-model');
    assert.ok(model.caption.includes('contributions') || model.caption.includes('add up'), 'a mean-pooled model shows contributions');
  });

  test('Shuffle words: B is Rust\'s shuffle of A with the shown seed, and the link reproduces it', { timeout: 120_000 }, async () => {
    await explainPair(A, B);
    await page.click('#shuffle-b');
    const shuffled = await newB(B);
    await page.waitForSelector('#shuffle-seed:not([hidden])');
    const seed = Number(await page.textContent('#shuffle-seed-value'));
    assert.ok(Number.isSafeInteger(seed), `the seed is shown (${seed})`);
    assert.equal(shuffled, wasm.shuffle_words(A, seed), 'B = shuffle_words(A, seed)');
    await page.waitForFunction((s) => location.hash.includes(`shuffle=${s}`), seed, { timeout: 5000 });
    // The link without B's text: the seed alone must remake B.
    const link = new URL(page.url());
    const hash = new URLSearchParams(link.hash.slice(1));
    hash.delete('b');
    link.hash = hash.toString();
    const other = await browser.newPage();
    await askToSaveData(other); // only the link's texts are checked
    await other.goto(link.href);
    await other.waitForFunction((s) => document.getElementById('text-b').value === s, shuffled, { timeout: 30_000 });
    assert.equal(await other.textContent('#shuffle-seed-value'), String(seed), 'the opened link shows the seed');
    await other.close();
    // Typing in B drops the seed (B is no longer that shuffle).
    await page.fill('#text-b', `${shuffled} `);
    await page.waitForFunction(() => !location.hash.includes('shuffle='), null, { timeout: 5000 });
    assert.equal(await page.isHidden('#shuffle-seed'), true, 'the seed is hidden after typing');
  });

  test('Reverse and Swap two words make B with Rust\'s reverse_words / swap_words', { timeout: 120_000 }, async () => {
    await explainPair(A, B);
    await page.click('#reverse-b');
    assert.equal(await newB(B), wasm.reverse_words(A));
    const before = await page.inputValue('#text-b');
    await page.click('#swap-b');
    const chips = await page.$$eval('#word-chips .chip', (cs) => cs.map((c) => c.textContent));
    assert.deepEqual(chips, A.split(' '), 'A\'s words as chips');
    await page.click('#word-chips .chip[data-i="0"]');
    await page.click('#word-chips .chip[data-i="3"]');
    assert.equal(await newB(before), wasm.swap_words(A, 0, 3));
  });

  test('Shuffle 20×: twenty scores equal to the CLI\'s, and their mean', { timeout: 300_000 }, async () => {
    await explainPair(A, B);
    await page.click('#shuffle-20');
    await page.waitForSelector('#shuffle-strip:not([hidden]) .strip-dot', { timeout: 120_000 });
    const dots = await page.$$eval('#shuffle-strip .strip-dot', (ds) => ds.map((d) => Number(d.dataset.value)));
    assert.equal(dots.length, 20);
    const file = path.join(MODELS, 'all-MiniLM-L6-v2.q8_0.gguf');
    dots.forEach((v, seed) => {
      const expected = Number(cli('similarity', '--model', file, A, wasm.shuffle_words(A, seed)));
      assertClose(v, expected, `shuffle seed ${seed}`, SIMILARITY_TOL);
    });
    const mean = dots.reduce((s, v) => s + v, 0) / dots.length;
    assertClose(Number(await page.getAttribute('#shuffle-strip', 'data-mean')), mean, 'the strip\'s mean');
    assert.equal(await page.textContent('#shuffle-strip .strip-mean-value'), mean.toFixed(3));
    assertClose(await dataValue(page, '#shuffle-strip .strip-pair'), await dataValue(page, '#score-model'), 'the pair\'s marker');
  });

  test('the layer chart has layers + 1 points and ends at the displayed cosine', { timeout: 120_000 }, async () => {
    await explainPair(A, B);
    const layers = JSON.parse(await page.getAttribute('#layers-chart', 'data-pair'));
    const shuffled = JSON.parse(await page.getAttribute('#layers-chart', 'data-shuffled'));
    assert.equal(layers.length, 6 + 1, 'MiniLM: 6 layers + the embedding output');
    assert.equal(shuffled.length, layers.length);
    assertClose(layers[layers.length - 1], await dataValue(page, '#score-model'), 'last layer vs the displayed cosine');
    const shuffledB = await page.textContent('#layers-shuffled-b');
    const seed = Number(await page.textContent('#layers-seed'));
    assert.equal(shuffledB, wasm.shuffle_words(B, seed));
    assertClose(shuffled[shuffled.length - 1],
      Number(cli('similarity', '--model', path.join(MODELS, 'all-MiniLM-L6-v2.q8_0.gguf'), A, shuffledB)), 'A vs shuffled B, last layer', SIMILARITY_TOL);
  });

  test('MPNet q8_0: the heat map equals the CLI\'s', { timeout: 300_000 }, async () => {
    await openModelPanel(page);
    await page.selectOption('#model-select', 'all-mpnet-base-v2@q8_0');
    await page.click('#model-load').catch(() => {}); // loads by itself once a model was loaded
    await page.waitForFunction(() => document.body.dataset.model === 'ready' &&
      document.getElementById('model-active').textContent.includes('mpnet'), null, { timeout: 240_000 });
    await explainPair(A, B);
    assertSameMap(await readMap(page, '#heatmap-model'), cliExplain('all-mpnet-base-v2.q8_0.gguf', A, B), 'MPNet model map');
    const layers = JSON.parse(await page.getAttribute('#layers-chart', 'data-pair'));
    assert.equal(layers.length, 12 + 1, 'MPNet: 12 layers + the embedding output');
  });
});
