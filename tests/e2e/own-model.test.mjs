// End-to-end test of "Use a model file from this computer" and "Compare runs", with a genuine
// llama.cpp file (build.sh fixtures: tests/artifacts/llama/, llama.cpp's own converter).
//
//   SR_BENCH_URL=http://127.0.0.1:PORT/  (the site, served by `sr-bench serve --dir www/dist`)
//   SR_BENCH_EXPECT=path/to/expect.json  ({"llama_active_passive_cosine": x, "active_passive_cosine": y})
//   SR_BENCH_CLI=path/to/sr-bench        (the page's compare CSV is checked against `sr-bench compare --csv`
//                                         over the runs' JSON exports)
//   node --test tests/e2e/own-model.test.mjs
//
// The file goes through the page's file input (page.setInputFiles, as a user picking it) and
// must never leave the browser: every request of the test is recorded, and none may be a
// POST/PUT or carry a body.

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import {
  ACTIVE, ARTIFACTS, askToSaveData, chooseData, cliPath, expected, launchChromium, openModelPanel, PASSIVE,
  ROOT, RUN_TIMEOUT, siteUrl,
} from './common.mjs';

const BASE = siteUrl();
const ORIGIN = new URL(BASE).origin;
const EXPECT = expected(['llama_active_passive_cosine', 'active_passive_cosine']);
const CLI = cliPath();
const LLAMA = path.join(ROOT, 'tests/artifacts/llama');
const LLAMA_Q8 = path.join(LLAMA, 'all-MiniLM-L6-v2.llamacpp.q8_0.gguf');
const LLAMA_F32 = path.join(LLAMA, 'all-MiniLM-L6-v2.llamacpp.f32.gguf');

const sha256Of = (file) => crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex');

if (!fs.existsSync(LLAMA_Q8)) throw new Error(`${LLAMA_Q8} is missing: run ./build.sh fixtures`);

describe('a model file from this computer, and comparing runs', () => {
  /** @type {import('playwright-core').Browser} */
  let browser;
  /** @type {import('playwright-core').Page} */
  let page;
  const requests = []; // {url, method, body} of every request, page and workers
  const errors = [];
  const exports = []; // the JSON export of each run, in run order
  let llamaCosine = NaN;

  function watch(ctx) {
    ctx.on('request', (r) => {
      const u = r.url();
      if (u.startsWith('data:')) return;
      requests.push({ url: u, method: r.method(), body: r.postDataBuffer() ? r.postDataBuffer().length : 0 });
    });
    ctx.on('console', (m) => { if (m.type() === 'error') errors.push(`console: ${m.text()}`); });
    ctx.on('weberror', (e) => errors.push(`pageerror: ${e.error().message}`));
  }

  const text = (sel) => page.textContent(sel);
  const dataValue = async (sel) => Number(await page.getAttribute(sel, 'data-value'));
  const infoValue = (field) => page.getAttribute(`#local-info-body tr[data-field="${field}"]`, 'data-value');

  async function waitReady(part) {
    await page.waitForFunction((p) => document.body.dataset.model === 'ready' &&
      document.getElementById('model-active').textContent.includes(p), part, { timeout: 180_000 });
  }

  async function scorePair(a, b) {
    await page.fill('#text-a', a);
    await page.fill('#text-b', b);
    await page.waitForSelector('#score-model[data-state="ready"]', { timeout: 120_000 });
    return dataValue('#score-model');
  }

  /** Runs the quick split with `encoder`, waits for its report, returns the JSON export and the time.
   * The model's runs leave STS-B test out (half the quick split's sentences: the page = CLI proof on
   * the whole split is demo's); the baseline's, seconds long, keeps it for the compare table. */
  async function runQuick(encoder, stsbTest = encoder === 'static') {
    await page.check('input[name="split"][value="quick"]');
    await chooseData(page, { stsbTest });
    await page.selectOption('#encoder', encoder);
    const runsBefore = await page.locator('#compare-body tr').count();
    const t0 = Date.now();
    await page.click('#run');
    await page.waitForFunction((n) => document.body.dataset.run === 'idle' &&
      document.querySelectorAll('#compare-body tr').length === n + 1, runsBefore, { timeout: RUN_TIMEOUT });
    const ms = Date.now() - t0;
    assert.match(await text('#run-msg'), /^Done/);
    const [dl] = await Promise.all([page.waitForEvent('download'), page.click('#export-json')]);
    const json = JSON.parse(fs.readFileSync(await dl.path(), 'utf8'));
    exports.push(json);
    return { json, ms };
  }

  before(async () => {
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    browser = await launchChromium();
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
    await askToSaveData(context); // nothing loads before the test's own files
    watch(context);
    page = await context.newPage();
    await page.goto(BASE);
    await page.waitForSelector('#model-select:not([disabled])', { state: 'attached' });
  });

  after(async () => {
    if (browser) await browser.close();
  });

  test('the llama.cpp file, picked with the file input: info, size and sha256 before anything runs', { timeout: 120_000 }, async (t) => {
    await page.setInputFiles('#local-file', LLAMA_Q8);
    await page.waitForFunction(() => !document.getElementById('local-load').disabled, null, { timeout: 60_000 });
    assert.equal(await page.getAttribute('#local-status', 'data-level'), 'info', await text('#local-status'));
    assert.equal(await infoValue('sha256'), sha256Of(LLAMA_Q8), 'the sha256 computed in the page');
    assert.equal(Number(await infoValue('bytes')), fs.statSync(LLAMA_Q8).size);
    assert.equal(await infoValue('architecture'), 'bert');
    assert.equal(await infoValue('dtype'), 'q8_0');
    assert.equal(await infoValue('dim'), '384');
    assert.equal(await infoValue('num_layers'), '6');
    assert.equal(await infoValue('vocab_size'), '30522');
    assert.equal(await infoValue('pooling'), 'mean');
    assert.equal(await infoValue('max_seq_length'), '512', 'llama.cpp records the position table');
    assert.ok(Number(await infoValue('worker_bytes')) > 0);
    assert.equal(await page.inputValue('#local-max-seq'), '512', 'the field defaults to the file\'s value');
    assert.match(await text('#local-max-seq-hint'), /256/, 'the hint says what sentence-transformers uses');
    assert.equal(await page.evaluate(() => document.body.dataset.model), undefined, 'nothing was loaded yet');

    // An impossible length is refused by Rust, with a plain message.
    await openModelPanel(page);
    await page.fill('#local-max-seq', '5000');
    await page.waitForFunction(() => /outside 1\.\.=512/.test(document.getElementById('local-status').textContent), null, { timeout: 30_000 });
    assert.equal(await page.getAttribute('#local-status', 'data-code'), 'bad-request');
    await page.fill('#local-max-seq', '256');
    await page.waitForFunction(() => !document.getElementById('local-load').disabled, null, { timeout: 30_000 });

    await page.check('#local-keep'); // kept in this origin's storage for the next visit (see below)
    const t0 = Date.now();
    await page.click('#local-load');
    await waitReady('local file');
    t.diagnostic(`the dropped llama.cpp q8_0 file (${fs.statSync(LLAMA_Q8).size} bytes) loaded in ${Date.now() - t0} ms ` +
      `(page's own timer: ${Math.round(Number(await page.getAttribute('#model-status', 'data-load-ms')))} ms)`);
    assert.match(await text('#model-status'), /reads up to 256 tokens/);
    assert.match(await text('#model-status'), /local file all-MiniLM-L6-v2\.llamacpp\.q8_0\.gguf/);
  });

  test('its cosine equals the CLI on the same file, and texts are cut at 256 tokens', { timeout: 180_000 }, async (t) => {
    llamaCosine = await scorePair(ACTIVE, PASSIVE);
    assert.ok(Math.abs(llamaCosine - EXPECT.llama_active_passive_cosine) <= 1e-5,
      `browser ${llamaCosine} vs CLI ${EXPECT.llama_active_passive_cosine}`);
    t.diagnostic(`llama.cpp file: browser ${llamaCosine}, CLI ${EXPECT.llama_active_passive_cosine}`);
    const long = 'word '.repeat(2000);
    await scorePair(long, PASSIVE);
    assert.match(await text('#play-msg'), /first 256 tokens/);
  });

  test('the quick split runs with the local file; caption and JSON export name it', { timeout: RUN_TIMEOUT }, async (t) => {
    const { json, ms } = await runQuick('model');
    t.diagnostic(`quick split with the local llama.cpp q8_0 file: ${ms} ms in the page`);
    const sha = sha256Of(LLAMA_Q8);
    assert.deepEqual(json.model_source, {
      kind: 'local file', file_name: path.basename(LLAMA_Q8), sha256: sha, bytes: fs.statSync(LLAMA_Q8).size, max_seq_length: 256,
    });
    for (const k of ['model', 'dtype', 'split', 'results', 'stsb_test', 'pairs', 'backend', 'backend_status', 'timings']) {
      assert.ok(k in json, `the export keeps "${k}"`);
    }
    assert.equal(json.split, 'quick');
    assert.equal(json.timings.model_source, 'local file');
    assert.ok(Number.isFinite(json.results.relation.avg_spearman));
    const source = await text('#results-source');
    assert.ok(source.includes('local file') && source.includes(path.basename(LLAMA_Q8)) && source.includes(sha), source);
  });

  test('the shipped q8_0 and the baseline run too; the same weights give the same cosine', { timeout: 2 * RUN_TIMEOUT }, async (t) => {
    await openModelPanel(page);
    await page.selectOption('#model-select', 'all-MiniLM-L6-v2@q8_0');
    await waitReady('all-MiniLM-L6-v2 · q8_0');
    const shipped = await scorePair(ACTIVE, PASSIVE);
    assert.ok(Math.abs(shipped - llamaCosine) <= 1e-3, `llama.cpp file ${llamaCosine} vs shipped ${shipped}`);
    assert.ok(Math.abs(shipped - EXPECT.active_passive_cosine) <= 1e-4, `shipped q8_0 ${shipped} vs CLI ${EXPECT.active_passive_cosine}`);
    const { json } = await runQuick('model');
    assert.equal(json.model_source.kind, 'site');
    assert.equal(json.timings.model_source === 'local file', false);
    // The same weights (llama.cpp's converter and ours): the quick split within ±0.5.
    for (const dim of ['structure', 'relation']) {
      const d = exports[0].results[dim].avg_spearman - json.results[dim].avg_spearman;
      assert.ok(Math.abs(d) <= 0.5, `${dim} avg: llama.cpp file vs shipped Δ ${d}`);
      t.diagnostic(`${dim} avg: llama.cpp file ${exports[0].results[dim].avg_spearman}, shipped ${json.results[dim].avg_spearman}`);
    }
    await runQuick('static');
  });

  test('compare: one row per run, values equal to each run\'s report; sortable; CSV', { timeout: 60_000 }, async (t) => {
    const rows = await page.$$eval('#compare-body tr', (trs) => trs.map((tr) => ({
      run: Number(tr.dataset.run),
      ...Object.fromEntries([...tr.querySelectorAll('td')].map((td) => [td.dataset.col, td.dataset.value])),
    })));
    assert.equal(rows.length, 3, 'the local file, the shipped q8_0 and the baseline');
    const num = (v) => (v === '' ? null : Number(v));
    for (const [i, json] of exports.entries()) {
      const row = rows.find((r) => r.run === i + 1);
      assert.ok(row, `a row for run ${i + 1}: ${json.model} (${json.encoder}, ${json.model_source.kind})`);
      assert.equal(row.source.startsWith('local file'), json.model_source.kind === 'local file');
      assert.equal(row.encoder === 'model', json.encoder !== 'static');
      assert.equal(num(row.structure_avg), json.results.structure.avg_spearman);
      assert.equal(num(row.relation_avg), json.results.relation.avg_spearman);
      assert.equal(num(row.stsb_test_spearman), json.stsb_test ? json.stsb_test.spearman : null);
      assert.equal(num(row.sentences_per_s), json.timings.sentences_per_s);
      assert.equal(num(row.gflop_per_s_per_core), json.timings.gflop_per_s_per_core);
      // The baseline runs no layer; a model's run counts its forward passes' operations.
      assert.equal(json.timings.flops > 0, json.encoder !== 'static', `${json.encoder}: ${json.timings.flops} FLOPs`);
      assert.equal(row.split, 'quick');
      assert.equal(row.dtype, json.dtype);
    }
    // Ranked by relation avg by default, highest first; a click sorts by another column, and a
    // run without a value (STS-B test left out) stays last either way.
    const relation = rows.map((r) => num(r.relation_avg));
    assert.deepEqual(relation, [...relation].sort((a, b) => b - a));
    assert.equal(await page.getAttribute('#compare-head th[aria-sort]', 'aria-sort'), 'descending');
    const column = (key) => page.$$eval(`#compare-body td[data-col="${key}"]`, (tds) => tds.map((td) => (td.dataset.value === '' ? null : Number(td.dataset.value))));
    await page.click('#compare-head button[data-sort="structure_avg"]');
    const structure = await column('structure_avg');
    assert.deepEqual(structure, [...structure].sort((a, b) => b - a));
    await page.click('#compare-head button[data-sort="structure_avg"]');
    assert.deepEqual(await column('structure_avg'), [...structure].reverse());
    await page.click('#compare-head button[data-sort="stsb_test_spearman"]');
    const stsb = await column('stsb_test_spearman');
    assert.equal(stsb.filter((v) => v !== null).length, 1, 'STS-B test: the baseline\'s run only');
    assert.notEqual(stsb[0], null, 'the run with a value first');
    await page.click('#compare-head button[data-sort="stsb_test_spearman"]');
    assert.notEqual((await column('stsb_test_spearman'))[0], null, 'and first when sorted the other way');
    assert.ok(await page.evaluate(() => !!globalThis.Chart && !!globalThis.Chart.getChart(document.getElementById('compare-chart'))),
      'the bar chart is drawn');
    const [dl] = await Promise.all([page.waitForEvent('download'), page.click('#compare-csv')]);
    const lines = fs.readFileSync(await dl.path(), 'utf8').trim().split('\n');
    assert.equal(lines.length, 4);
    // The columns of `sr-bench compare --csv`, then the page's own.
    const header = lines[0].split(',');
    assert.deepEqual(header.slice(0, 5), ['label', 'model', 'dtype', 'split', 'encoder']);
    assert.equal(header[5], 'structure_stsb');
    assert.equal(header[12], 'relation_stsb');
    assert.equal(header[18], 'relation_avg');
    assert.equal(header[19], 'stsb_test_spearman');
    assert.deepEqual(header.slice(20, 27), ['pairwise_stsb', 'pairwise_sickr', 'pairwise_askubuntu', 'pairwise_cqa',
      'pairwise_twitter', 'pairwise_biosses', 'pairwise_all']);
    assert.deepEqual(header.slice(27), ['rank', 'backend', 'source', 'sha256', 'finished', 'sentences_per_s',
      'gflop_per_s', 'gflop_per_s_per_core', 'data', 'czech_news_sts_pearson', 'own_pairs_spearman', 'prefix']);
    const first = lines[1].split(',');
    const ranked = await page.$$eval('#compare-body tr', (trs) => trs.map((tr) => Number(tr.dataset.run)));
    const firstReport = exports[ranked[0] - 1];
    assert.equal(Number(first[header.indexOf('relation_cqa')]), firstReport.results.relation.cqa.spearman);
    assert.equal(first[header.indexOf('stsb_test_spearman')], firstReport.stsb_test ? String(firstReport.stsb_test.spearman) : '');
    assert.equal(first[header.indexOf('pairwise_all')], firstReport.pairwise ? String(firstReport.pairwise.all.accuracy) : '');
    // The CLI reads the same JSON exports: its CSV is the page's first columns, line for line.
    const files = ranked.map((run) => {
      const file = path.join(ARTIFACTS, `own-model-run-${run}.json`);
      fs.writeFileSync(file, JSON.stringify(exports[run - 1]));
      return file;
    });
    const cliLines = execFileSync(CLI, ['compare', '--csv', ...files], { encoding: 'utf8' }).trim().split('\n');
    const shared = cliLines[0].split(',').length;
    assert.equal(shared, 27, 'sr-bench compare --csv has the 27 columns the page starts with');
    assert.deepEqual(lines.map((l) => l.split(',').slice(0, shared).join(',')), cliLines);
    t.diagnostic(`the page's compare CSV equals \`sr-bench compare --csv\` on its ${shared} columns`);
    await page.screenshot({ path: path.join(ARTIFACTS, 'compare.png'), fullPage: true });
  });

  test('the benchmark helpers truncate as the field says (max sequence length 16)', { timeout: RUN_TIMEOUT }, async () => {
    await page.setInputFiles('#local-file', LLAMA_Q8);
    await page.waitForFunction(() => !document.getElementById('local-load').disabled, null, { timeout: 60_000 });
    await openModelPanel(page);
    await page.fill('#local-max-seq', '16');
    await page.waitForFunction(() => /this device allows/.test(document.getElementById('local-status').textContent) &&
      !document.getElementById('local-load').disabled, null, { timeout: 30_000 });
    await page.click('#local-load');
    await page.waitForFunction(() => document.body.dataset.model === 'ready' &&
      /reads up to 16 tokens/.test(document.getElementById('model-status').textContent), null, { timeout: 180_000 });
    const { json } = await runQuick('model');
    assert.equal(json.model_source.max_seq_length, 16);
    // A pair longer than 16 tokens: the helpers' cosine (the report) equals the engine's (the playground).
    const long = json.pairs.filter((p) => p.sentence1.split(' ').length > 24 && p.sentence2.split(' ').length > 24)[0];
    assert.ok(long, 'a pair longer than 16 tokens');
    const engine = await scorePair(long.sentence1, long.sentence2);
    assert.ok(Math.abs(engine - long.cosine) <= 1e-4, `report ${long.cosine} vs playground ${engine}`);
    assert.notEqual(json.results.relation.avg_spearman, exports[0].results.relation.avg_spearman, 'truncation changed the scores');
  });

  test('the kept file is offered after a reload, and "Forget" removes it', { timeout: 120_000 }, async () => {
    await page.reload();
    await page.waitForSelector('#kept:not([hidden])', { timeout: 30_000 });
    const sha = sha256Of(LLAMA_Q8);
    assert.equal(await page.getAttribute('#kept', 'data-sha256'), sha);
    assert.match(await text('#kept-text'), /all-MiniLM-L6-v2\.llamacpp\.q8_0\.gguf/);
    await openModelPanel(page);
    await page.click('#kept-use');
    await page.waitForFunction(() => !document.getElementById('local-load').disabled, null, { timeout: 60_000 });
    assert.equal(await infoValue('sha256'), sha, 'the kept bytes are the file\'s');
    await page.click('#kept-forget');
    await page.waitForSelector('#kept[hidden]', { state: 'attached', timeout: 10_000 });
    assert.equal(await page.evaluate(() => caches.has('sr-bench-local-file-v1')), false);
    await page.reload();
    await page.waitForSelector('#model-select:not([disabled])', { state: 'attached' });
    await page.waitForTimeout(500);
    assert.equal(await page.isHidden('#kept'), true, 'nothing is offered after "Forget"');
  });

  test('a file that is not a model gets a plain message with its code; a bf16 file is converted', { timeout: 60_000 }, async () => {
    await page.evaluate(() => {
      const dt = new DataTransfer();
      dt.items.add(new File([new Uint8Array(4096).fill(7)], 'broken.gguf'));
      document.getElementById('engine').dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
    });
    await page.waitForFunction(() => document.getElementById('local-status').dataset.level === 'error', null, { timeout: 30_000 });
    assert.equal(await page.getAttribute('#local-status', 'data-code'), 'bad-model');
    assert.match(await text('#local-status'), /^broken\.gguf cannot be used: /);
    assert.equal(await page.isDisabled('#local-load'), true);
    // A dtype our kernels do not run (llama.cpp's bf16; tests/llama_gguf.rs names one they refuse):
    // the file is described as converted when it loads.
    const bf16 = path.join(LLAMA, 'all-MiniLM-L6-v2.llamacpp.bf16.gguf');
    assert.ok(fs.existsSync(bf16), `${bf16} is missing: run ./build.sh fixtures`);
    await page.setInputFiles('#local-file', bf16);
    await page.waitForFunction(() => !document.getElementById('local-load').disabled, null, { timeout: 30_000 });
    assert.match(await text('#local-info-body tr[data-field="dtype"]'), /bf16, converted to f32 when it loads/);
  });

  test('no request carried the file: no upload, no body', () => {
    const sizes = [fs.statSync(LLAMA_Q8).size];
    assert.deepEqual(requests.filter((r) => r.method !== 'GET'), [], 'only GET requests');
    assert.deepEqual(requests.filter((r) => r.body > 0 || sizes.some((s) => Math.abs(r.body - s) < 1e6 && r.body > 0)), []);
    assert.deepEqual(requests.filter((r) => /llamacpp|broken/.test(r.url)), [], 'the file name is in no URL');
    assert.deepEqual(requests.filter((r) => new URL(r.url).origin !== ORIGIN && !r.url.startsWith('blob:')), []);
    assert.deepEqual(errors, []);
  });

  test('a file too large for this device is refused with the figures, never loaded', { timeout: 120_000 }, async () => {
    // navigator.deviceMemory = 0.25 GB: the page allows a quarter, 62.5 MB; the f32 file is 91 MB.
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await askToSaveData(ctx);
    watch(ctx);
    await ctx.addInitScript(() => Object.defineProperty(Navigator.prototype, 'deviceMemory', { get: () => 0.25, configurable: true }));
    const small = await ctx.newPage();
    await small.goto(BASE);
    await small.setInputFiles('#local-file', LLAMA_F32);
    await small.waitForFunction(() => document.getElementById('local-status').dataset.code === 'too-large', null, { timeout: 60_000 });
    const msg = await small.textContent('#local-status');
    const needs = Number(await small.getAttribute('#local-status', 'data-needs'));
    assert.equal(Number(await small.getAttribute('#local-status', 'data-allows')), 62.5e6);
    assert.ok(needs > 91e6, `needs ${needs}`);
    assert.match(msg, new RegExp(`needs ${(needs / 1e6).toFixed(needs < 1e8 ? 1 : 0)} MB of memory`));
    assert.match(msg, /this device allows 62\.5 MB/);
    assert.equal(await small.isDisabled('#local-load'), true);
    assert.equal(await small.getAttribute('#local-info-body tr[data-field="sha256"]', 'data-value'), '', 'never read whole');
    assert.equal(await small.evaluate(() => document.body.dataset.model), undefined, 'nothing was loaded');
    await small.screenshot({ path: path.join(ARTIFACTS, 'too-large.png'), fullPage: true });
    await ctx.close();
  });
});
