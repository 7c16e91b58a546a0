// End-to-end test of the static web demo, driven with playwright-core and the system Chromium.
//
//   SR_BENCH_URL=http://127.0.0.1:PORT/  (the site, served by `sr-bench serve --dir www/dist`)
//   SR_BENCH_EXPECT=path/to/expect.json  ({"active_passive_cosine": x, "quick_report": {…CLI report…}}; env.mjs)
//   CHROMIUM=/usr/bin/chromium           (optional)
//   node --test tests/e2e/
//
// Screenshots go to tests/artifacts/ (git-ignored).

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import {
  ACTIVE, ARTIFACTS, askToSaveData, assertQuickTableEquals, chooseData, cliJson, DIMS, expected, FILES,
  launchChromium, openModelPanel, PASSIVE, RUN_TIMEOUT, siteUrl,
} from './common.mjs';

const BASE = siteUrl();
const ORIGIN = new URL(BASE).origin;
const EXPECT = expected(['active_passive_cosine', 'quick_report']);
const MODEL_CACHE = 'sr-bench-models-v1';

/** RFC 4180 records (quoted fields may hold commas, quotes and newlines). */
function parseCsv(textIn) {
  const rows = [];
  let row = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < textIn.length; i++) {
    const c = textIn[i];
    if (quoted) {
      if (c === '"' && textIn[i + 1] === '"') { field += '"'; i++; } else if (c === '"') quoted = false; else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') { row.push(field); field = ''; } else if (c === '\r' && textIn[i + 1] === '\n') { /* CRLF */ } else if (c === '\n') { row.push(field); rows.push(row); row = []; field = ''; } else field += c;
  }
  if (field !== '' || row.length) { row.push(field); rows.push(row); }
  return rows;
}

const cliReport = () => EXPECT.quick_report;

describe('sr-bench web demo', () => {
  /** @type {import('playwright-core').Browser} */
  let browser;
  /** @type {import('playwright-core').BrowserContext} */
  let context;
  /** @type {import('playwright-core').Page} */
  let page;
  /** @type {import('playwright-core').BrowserContext|null} */
  let shareContext = null;
  const requests = [];      // every request URL seen, in order
  const external = [];      // requests that left the origin
  const consoleErrors = []; // console errors, page errors, worker errors, CSP violations
  let manifest = null;

  const ggufRequests = () => requests.filter((u) => new URL(u).pathname.endsWith('.gguf'));
  const dataValue = async (selector) => {
    const v = await page.getAttribute(selector, 'data-value');
    return v === null || v === '' ? NaN : Number(v);
  };
  const text = (selector) => page.textContent(selector);
  const shot = (name, opts = {}) => page.screenshot({ path: path.join(ARTIFACTS, name), fullPage: true, ...opts });

  function watch(ctx) {
    ctx.on('request', (r) => {
      const u = r.url();
      if (u.startsWith('data:') || u.startsWith('blob:')) return;
      requests.push(u);
      if (new URL(u).origin !== ORIGIN) external.push(u);
    });
    ctx.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(`console: ${m.text()}`); });
    ctx.on('weberror', (e) => consoleErrors.push(`pageerror: ${e.error().message}`));
    ctx.on('page', (p) => {
      p.on('worker', (w) => w.on('console', (m) => {
        if (m.type() === 'error') consoleErrors.push(`worker console: ${m.text()}`);
      }));
    });
  }

  /** True once the page fits the viewport's width (the chart resizes itself a moment after the viewport). */
  async function noSidewaysScroll() {
    const ok = await page.waitForFunction(() => document.documentElement.scrollWidth <= window.innerWidth + 1, null, { timeout: 3000 })
      .then(() => true, () => false);
    if (!ok) {
      const wide = await page.evaluate(() => [...document.querySelectorAll('body *')]
        .filter((e) => e.getBoundingClientRect().right > window.innerWidth + 1 && !e.closest('.table-wrap'))
        .slice(0, 8).map((e) => `${e.tagName.toLowerCase()}#${e.id}.${e.className} right=${Math.round(e.getBoundingClientRect().right)}`));
      console.error(`too wide for ${await page.evaluate(() => window.innerWidth)}px: ${wide.join(', ')}`);
    }
    return ok;
  }

  async function waitModelReady(dtype, timeout = 180_000) {
    await page.waitForFunction((d) => document.body.dataset.model === 'ready' &&
      document.getElementById('model-active').textContent.includes(d), dtype, { timeout });
  }

  async function typePair(a, b) {
    await page.fill('#text-a', a);
    await page.fill('#text-b', b);
    await page.waitForSelector('#score-model:not([data-state="pending"])', { timeout: 120_000 });
  }

  async function startRun(split) {
    await page.check(`input[name="split"][value="${split}"]`);
    await page.click('#run');
    await page.waitForFunction(() => document.body.dataset.run === 'running' &&
      Number(document.getElementById('run-stats').dataset.done || 0) > 0, null, { timeout: 120_000 });
  }

  async function waitRunIdle() {
    await page.waitForFunction(() => document.body.dataset.run === 'idle', null, { timeout: 60_000 });
  }

  before(async () => {
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    browser = await launchChromium();
    context = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
    watch(context);
    page = await context.newPage();
  });

  after(async () => {
    if (browser) await browser.close();
  });

  test('the page loads with a strict CSP and no inline styles or scripts', { timeout: 60_000 }, async () => {
    const res = await page.goto(BASE);
    assert.equal(res.status(), 200);
    const header = res.headers()['content-security-policy'];
    assert.ok(header, 'the server sends a Content-Security-Policy header');
    const meta = await page.getAttribute('meta[http-equiv="Content-Security-Policy"]', 'content');
    assert.ok(meta, 'index.html has a CSP <meta>');
    for (const csp of [header, meta]) {
      assert.match(csp, /script-src 'self' 'wasm-unsafe-eval'/);
      assert.doesNotMatch(csp, /unsafe-inline|'unsafe-eval'/);
    }
    const html = await res.text();
    assert.doesNotMatch(html, /\sstyle=/i, 'no style attributes in index.html');
    assert.doesNotMatch(html, /<script(?![^>]*\ssrc=)[^>]*>/i, 'no inline <script>');
    assert.doesNotMatch(html, /\son[a-z]+=/i, 'no inline event handlers');
    assert.equal(await page.locator('[style]').count(), 0, 'no style attributes in the rendered page');
    await page.waitForSelector('#model-select:not([disabled])', { state: 'attached' });
    manifest = (await (await context.request.get(new URL('models/manifest.json', BASE).href)).json()).models;
    const options = await page.$$eval('#model-select option', (os) => os.map((o) => o.value));
    for (const m of manifest) assert.ok(options.includes(`${m.name}@${m.dtype}`), `${m.name}@${m.dtype} offered`);
    assert.match(await page.inputValue('#model-select'), /@q8_0$/, 'q8_0 preselected');
    assert.match(await text('#model-select option:checked'), /MB/, 'the download size is shown');
    // Backend picker: CPU by default; WebGPU offered where the browser has the API (else disabled,
    // saying why); the WebGPU paths themselves are tested in webgpu-page.test.mjs.
    assert.equal(await page.isChecked('input[name="backend"][value="cpu"]'), true, 'CPU preselected');
    const webgpuApi = await page.evaluate(() => 'gpu' in navigator);
    assert.equal(await page.isDisabled('input[name="backend"][value="webgpu"]'), !webgpuApi, 'WebGPU enabled iff navigator.gpu');
    assert.equal(await page.isDisabled('input[name="backend"][value="auto"]'), false, 'Auto offered');
    assert.match(await text('#active-backend'), /CPU/);
    assert.equal(await page.isChecked('input[name="split"][value="quick"]'), true, 'quick preselected');
  });

  test('loads the q8_0 model on arrival, without a click, over the network with byte progress', { timeout: 300_000 }, async () => {
    await page.waitForSelector('#model-progress:not([hidden])', { timeout: 30_000 }).catch(() => {});
    await waitModelReady('q8_0');
    assert.equal(await page.getAttribute('#model-status', 'data-source'), 'network');
    assert.ok(ggufRequests().length > 0, 'the .gguf was fetched (and the request watcher sees worker fetches)');
    assert.match(await text('#model-status'), /sha256/);
  });

  test('active/passive pair: the score equals the CLI cosine', { timeout: 120_000 }, async (t) => {
    await typePair(ACTIVE, PASSIVE);
    assert.equal(await page.getAttribute('#score-model', 'data-state'), 'ready');
    const cos = await dataValue('#score-model');
    const base = await dataValue('#score-static');
    assert.ok(Number.isFinite(cos) && cos > -1.0001 && cos < 1.0001, `model cosine ${cos}`);
    assert.ok(Number.isFinite(base), `baseline cosine ${base}`);
    assert.equal(await text('#score-model'), cos.toFixed(3));
    assert.ok(Math.abs(cos - EXPECT.active_passive_cosine) <= 1e-4,
      `browser ${cos} vs CLI ${EXPECT.active_passive_cosine}`);
    t.diagnostic(`active/passive cosine: browser ${cos}, CLI ${EXPECT.active_passive_cosine}`);
    assert.match(await text('#verdict'), /Same meaning/);
    // Each phenomenon is one click away and says whether the meaning is the same.
    for (const [id, same] of [['concept-order', false], ['cause-effect', false], ['inversion', true],
      ['partial-inversion', true], ['clause-reorder', true], ['active-passive', true]]) {
      await page.click(`button[data-example="${id}"]`);
      await page.waitForSelector('#score-model[data-state="ready"]', { timeout: 60_000 });
      assert.match(await text('#verdict'), same ? /Same meaning/ : /Different meaning/, id);
      assert.ok(Number.isFinite(await dataValue('#score-model')), id);
    }
    assert.ok(Math.abs((await dataValue('#score-model')) - cos) < 1e-9, 'the example gives the same score as typing');
    await shot('playground.png');
  });

  test('the quick benchmark runs to completion and its table equals the CLI report', { timeout: RUN_TIMEOUT }, async (t) => {
    assert.equal(await page.isChecked('input[name="split"][value="quick"]'), true);
    await page.click('#run');
    await page.waitForFunction(() => document.body.dataset.run === 'running', null, { timeout: 30_000 });
    // The page stays responsive during the run: typing and evaluation round-trips stay fast.
    let slowest = 0;
    let sawRate = false;
    while (await page.evaluate(() => document.body.dataset.run === 'running')) {
      const t0 = Date.now();
      await page.evaluate(() => performance.now());
      slowest = Math.max(slowest, Date.now() - t0);
      const stats = await text('#run-stats');
      if (/sentences\/s/.test(stats) && /left/.test(stats)) sawRate = true;
      await page.waitForTimeout(250);
    }
    assert.ok(slowest < 1000, `the page answered within ${slowest} ms during the run`);
    t.diagnostic(`slowest page round-trip during the run: ${slowest} ms`);
    await page.waitForSelector('#results:not([hidden])', { timeout: 10_000 });
    assert.ok(sawRate || (await text('#run-msg')).includes('sentences/s'), 'sentences/s and ETA shown');

    const cli = cliReport();
    await assertQuickTableEquals(page, cli);
    // The Results view: every recorded row of results.json (docs/results), the paper's rows,
    // and this run beside them, its figures the CLI's (retrieval included).
    const measured = await page.evaluate(async () => (await fetch('results.json')).json());
    assert.ok(measured.rows.length >= 5, `${measured.rows.length} recorded rows`);
    assert.deepEqual(await page.$$eval('#measured-body tr[data-who="sr-bench"]', (trs) => trs.map((tr) => tr.dataset.id)),
      measured.rows.map((r) => r.id), 'every recorded row, in order');
    assert.equal(await page.locator('#measured-body tr[data-who="paper"]').count(), Object.keys(measured.paper).length);
    const mine = page.locator('#measured-body tr[data-who="you"]').last();
    const mineValue = async (col) => Number(await mine.locator(`td[data-col="${col}"]`).getAttribute('data-value'));
    assert.ok(Math.abs((await mineValue('stsb')) - cli.stsb_test.spearman) <= 0.01, 'STS-B test in the Results view');
    assert.ok(Math.abs((await mineValue('ndcg10')) - 100 * cli.retrieval.stsb_test.ndcg_at_10) <= 0.01,
      'the page scores retrieval as the CLI does');
    const quickRow = measured.rows.find((r) => r.id === 'all-MiniLM-L6-v2.q8_0.quick');
    assert.ok(Math.abs((await mineValue('relation_avg')) - quickRow.report.results.relation.avg_spearman) <= 0.01,
      'this run equals the recorded quick row of the same file');
    assert.equal(await mine.locator('td[data-col="sha256"]').getAttribute('title'), quickRow.model_sha256);
    // Pairwise accuracy: the page's row and sentence equal the CLI's report (its `pairwise`).
    assert.ok(cli.pairwise, 'the CLI report has pairwise accuracy');
    for (const f of [...FILES, 'all']) {
      const want = f === 'all' ? cli.pairwise.all.accuracy : cli.pairwise.files[f].accuracy;
      const got = await page.getAttribute(`#results-body tr[data-row="pairwise"] td[data-key="${f}"]`, 'data-value');
      if (want === null) assert.equal(got, '', `pairwise ${f}`);
      else assert.ok(Math.abs(Number(got) - want) <= 0.01, `pairwise ${f}: page ${got} vs CLI ${want}`);
    }
    assert.ok(Math.abs(Number(await page.getAttribute('#pairwise-value', 'value')) - cli.pairwise.all.accuracy) <= 0.01);
    assert.match(await text('#pairwise-extra'), /a coin: 50\.00/);
    // The paper's Table 4 value and the delta in each cell (MiniLM is in the paper).
    assert.ok(cli.paper, 'the CLI report of MiniLM carries its Table 4 row');
    const paperStsb = cli.paper.structure.stsb;
    assert.equal(await text('[data-cell="structure-stsb"] .ref'), `paper ${paperStsb.toFixed(2)}`);
    const delta = Number(await page.getAttribute('[data-cell="structure-stsb"] .delta', 'data-value'));
    assert.ok(Math.abs(delta - ((await dataValue('[data-cell="structure-stsb"]')) - paperStsb)) < 1e-9);

    // Pearson / CI on demand.
    assert.equal(await page.isVisible('[data-cell="structure-stsb"] .extra'), false);
    await page.check('#show-extra');
    assert.equal(await page.isVisible('[data-cell="structure-stsb"] .extra'), true);
    assert.match(await text('[data-cell="structure-stsb"]'), /Pearson .*95% CI \[/s);

    // Scatter per file × dimension (a Chart.js chart) and the mis-ranked list.
    await page.selectOption('#plot-file', 'sickr');
    await page.selectOption('#plot-dim', 'relation');
    const plotted = await page.evaluate(() => globalThis.Chart.getChart(document.getElementById('scatter')).data.datasets[0].data.length);
    assert.ok(plotted > 0, 'scatter has points');
    assert.ok((await page.locator('#misranked-body tr').count()) > 0, 'mis-ranked pairs listed');
    await shot('results.png');
    await page.locator('#results .table-wrap').first().screenshot({ path: path.join(ARTIFACTS, 'results-table.png') });
    await page.setViewportSize({ width: 390, height: 844 });
    assert.ok(await noSidewaysScroll(), 'results: no sideways page scroll on a phone');
    await page.evaluate(() => document.getElementById('results').scrollIntoView({ block: 'start' }));
    await page.screenshot({ path: path.join(ARTIFACTS, 'phone-results.png') });
    await page.setViewportSize({ width: 1280, height: 900 });

    // Export: JSON (report + browser/backend/timings) and CSV (from pairs).
    const [dj] = await Promise.all([page.waitForEvent('download'), page.click('#export-json')]);
    const json = JSON.parse(fs.readFileSync(await dj.path(), 'utf8'));
    await dj.saveAs(path.join(ARTIFACTS, dj.suggestedFilename()));
    for (const k of ['model', 'dtype', 'split', 'results', 'stsb_test', 'pairs', 'browser', 'backend', 'timings']) {
      assert.ok(k in json, `JSON export has "${k}"`);
    }
    assert.equal(json.split, 'quick');
    assert.equal(json.backend, 'cpu');
    assert.equal(json.backend_status.active, 'cpu');
    assert.equal(json.backend_status.adapter, null);
    for (const dim of DIMS) {
      for (const f of FILES) assert.equal(json.results[dim][f].n, cli.results[dim][f].n, `${dim}/${f}: same rows as the CLI`);
    }
    const cliPairs = DIMS.reduce((n, dim) => n + FILES.reduce((m, f) => m + cli.results[dim][f].n, 0), cli.stsb_test.n);
    assert.equal(json.pairs.length, cliPairs, 'one pair row per pair the CLI scored (SR and STS-B test)');
    const sickrRelation = json.pairs.filter((p) => p.file === 'sickr' && p.dimension === 'relation').length;
    assert.equal(plotted, sickrRelation, 'the scatter shows every pair of the chosen file and dimension');
    const [dc] = await Promise.all([page.waitForEvent('download'), page.click('#export-csv')]);
    const rows = parseCsv(fs.readFileSync(await dc.path(), 'utf8'));
    assert.deepEqual(rows[0], ['file', 'dimension', 'line', 'sentence1', 'sentence2', 'gold', 'cosine']);
    assert.equal(rows.length - 1, json.pairs.length, 'one CSV record per pair');
    const p0 = json.pairs[0];
    assert.deepEqual(rows[1], [p0.file, p0.dimension, String(p0.line), p0.sentence1, p0.sentence2, String(p0.gold), String(p0.cosine)]);
  });

  test('the syntax-blind baseline can be benchmarked too (no paper column for it)', { timeout: RUN_TIMEOUT }, async () => {
    await page.selectOption('#encoder', 'static');
    await page.click('#run');
    await page.waitForFunction(() => /^Done/.test(document.getElementById('run-msg').textContent) &&
      /baseline/.test(document.getElementById('results-caption').textContent), null, { timeout: RUN_TIMEOUT });
    assert.equal(await page.locator('#results-body .ref').count(), 0, 'no paper values beside the baseline');
    for (const dim of DIMS) assert.ok(Number.isFinite(await dataValue(`[data-cell="${dim}-avg"]`)));
    await page.selectOption('#encoder', 'model');
  });

  test('a run of one SR file without STS-B test equals `sr-bench eval --files biosses --no-stsb-test`', { timeout: RUN_TIMEOUT }, async (t) => {
    const cli = cliJson(['eval', '--model', 'www/dist/models/all-MiniLM-L6-v2.q8_0.gguf', '--data', 'data',
      '--split', 'quick', '--files', 'biosses', '--no-stsb-test']);
    await chooseData(page, { files: ['biosses'], stsbTest: false });
    await page.click('#run');
    await waitRunIdle();
    assert.match(await text('#run-msg'), /^Done/);
    for (const dim of DIMS) {
      for (const f of ['biosses', 'avg']) {
        const got = await dataValue(`[data-cell="${dim}-${f}"]`);
        const want = f === 'avg' ? cli.results[dim].avg_spearman : cli.results[dim][f].spearman;
        assert.ok(Math.abs(got - want) <= 0.01, `${dim}/${f}: browser ${got} vs CLI ${want}`);
      }
      for (const f of FILES.filter((x) => x !== 'biosses')) {
        assert.equal(await text(`[data-cell="${dim}-${f}"] .v`), '—', `${dim}/${f}: not run`);
      }
      // Table 4's avg is over six files: the avg of one has no paper value beside it.
      assert.equal(await page.locator(`[data-cell="${dim}-avg"] .ref`).count(), 0, `${dim}/avg: no paper value`);
      assert.equal(await page.locator(`[data-cell="${dim}-biosses"] .ref`).count(), 1, `${dim}/biosses: the paper's value`);
    }
    assert.ok(Number.isNaN(await dataValue('#stsb-test-value')), 'no STS-B test');
    assert.match(await text('#results-head'), /avg of 1/);
    assert.match(await text('#results-caption'), /1 of 6 SR files \(biosses\).*no STS-B test/);
    // Compare leaves the avg of a partial run empty, as `sr-bench compare` does.
    const last = page.locator('#compare-body tr').filter({ has: page.locator('td[data-col="relation_avg"][data-value=""]') });
    assert.equal(await last.count(), 1, 'one compare row without an avg: this run');
    t.diagnostic(`biosses only: relation ${cli.results.relation.biosses.spearman}, CLI = page`);
    await chooseData(page); // everything ticked again for the tests below
  });

  test('the URL holds the sentences and settings; a shared link restores them', { timeout: 60_000 }, async () => {
    await page.waitForFunction(() => location.hash.includes('backend=cpu'), null, { timeout: 5000 });
    const hash = new URLSearchParams((await page.evaluate(() => location.hash)).slice(1));
    assert.equal(hash.get('a'), ACTIVE);
    assert.equal(hash.get('b'), PASSIVE);
    assert.equal(hash.get('dtype'), 'q8_0');
    const other = manifest.find((m) => m.dtype !== 'q8_0');
    shareContext = await browser.newContext();
    await askToSaveData(shareContext); // only the link's state is tested here, not its load
    watch(shareContext);
    const p2 = await shareContext.newPage();
    const link = new URLSearchParams({ a: 'Tom likes Taylor Swift.', b: 'Taylor Swift likes Tom.', model: other.name, dtype: other.dtype, backend: 'cpu' });
    await p2.goto(`${BASE}#${link}`);
    await p2.waitForSelector('#model-select:not([disabled])', { state: 'attached' });
    assert.equal(await p2.inputValue('#text-a'), 'Tom likes Taylor Swift.');
    assert.equal(await p2.inputValue('#text-b'), 'Taylor Swift likes Tom.');
    assert.equal(await p2.inputValue('#model-select'), `${other.name}@${other.dtype}`);
    assert.match(await p2.textContent('#verdict'), /Different meaning/);
    await p2.close();
    await shareContext.close();
  });

  test('after a reload the model comes from the Cache API, not the network', { timeout: 180_000 }, async () => {
    const before = ggufRequests().length;
    await page.reload();
    await waitModelReady('q8_0');
    assert.equal(await page.getAttribute('#model-status', 'data-source'), 'cache');
    assert.equal(ggufRequests().length, before, 'no .gguf request after the reload');
    assert.equal(await page.inputValue('#text-a'), ACTIVE, 'the sentences survive the reload (URL state)');
    await page.waitForSelector('#score-model[data-state="ready"]', { timeout: 60_000 });
  });

  test('a corrupted cache entry is detected, dropped and fetched again', { timeout: 300_000 }, async () => {
    const replaced = await page.evaluate(async (name) => {
      const cache = await caches.open(name);
      const keys = await cache.keys();
      for (const req of keys) {
        await cache.put(req, new Response(new Uint8Array(4096).fill(0x47), { headers: { 'content-type': 'application/octet-stream' } }));
      }
      return keys.map((k) => k.url);
    }, MODEL_CACHE);
    assert.ok(replaced.some((u) => u.includes('q8_0')), `the q8_0 file was in the cache (${replaced.join(', ')})`);
    const before = ggufRequests().length;
    await page.reload();
    await page.waitForSelector('#model-notice:not([hidden])', { timeout: 120_000 });
    assert.equal(await page.getAttribute('#model-notice', 'data-code'), 'cache-corrupt');
    assert.match(await text('#model-notice'), /corrupted/);
    await waitModelReady('q8_0');
    assert.equal(await page.getAttribute('#model-status', 'data-source'), 'network');
    assert.ok(ggufRequests().length > before, 'the model was downloaded again');
    const entry = manifest.find((m) => m.dtype === 'q8_0');
    const cachedBytes = await page.evaluate(async (name) => {
      const cache = await caches.open(name);
      const keys = (await cache.keys()).filter((r) => r.url.includes('q8_0'));
      return keys.length === 1 ? (await (await cache.match(keys[0])).arrayBuffer()).byteLength : -keys.length;
    }, MODEL_CACHE);
    assert.equal(cachedBytes, entry.bytes, 'the cache holds the good file again');
    await page.waitForSelector('#score-model[data-state="ready"]', { timeout: 60_000 });
    {
      assert.ok(Math.abs((await dataValue('#score-model')) - EXPECT.active_passive_cosine) <= 1e-4);
    }
  });

  test('new user: empty boxes give a message, never NaN', { timeout: 60_000 }, async () => {
    await page.fill('#text-a', '');
    await page.waitForSelector('#score-model[data-state="empty"]', { timeout: 10_000 });
    assert.match(await text('#play-msg'), /box A/);
    await page.fill('#text-b', '');
    await page.waitForFunction(() => /both boxes/.test(document.getElementById('play-msg').textContent), null, { timeout: 10_000 });
    assert.equal(await text('#score-model'), '—');
    assert.equal(await page.isVisible('#play-msg'), true);
    await page.fill('#text-a', '   ');
    await page.fill('#text-b', 'Only one side.');
    await page.waitForSelector('#score-model[data-state="empty"]', { timeout: 10_000 });
    assert.doesNotMatch(await page.evaluate(() => document.body.innerText), /NaN/);
  });

  test('new user: a 20,000-character paste is scored and the truncation is explained', { timeout: 180_000 }, async () => {
    const long = 'The committee reviewed the proposal in great detail. '.repeat(400).slice(0, 20_000);
    assert.equal(long.length, 20_000);
    await typePair(long, 'The committee reviewed the proposal.');
    assert.equal(await page.getAttribute('#score-model', 'data-state'), 'ready');
    assert.ok(Number.isFinite(await dataValue('#score-model')));
    assert.match(await text('#play-msg'), /20,000 characters.*first \d+ tokens/);
    assert.equal((await page.inputValue('#text-a')).length, 20_000, 'the text is kept whole in the box');
  });

  test('new user: emoji are scored', { timeout: 120_000 }, async () => {
    await typePair('The chef 👩‍🍳 cooked the meal 🍝🎉', 'The meal 🍝 was cooked by the chef 👩‍🍳');
    assert.equal(await page.getAttribute('#score-model', 'data-state'), 'ready');
    const v = await dataValue('#score-model');
    assert.ok(Number.isFinite(v) && Math.abs(v) <= 1.0001, `emoji score ${v}`);
    await typePair('🙂', '🎉🎉🎉');
    assert.notEqual(await page.getAttribute('#score-model', 'data-state'), 'pending');
    assert.doesNotMatch(await page.evaluate(() => document.body.innerText), /NaN/);
    await typePair(ACTIVE, PASSIVE);
  });

  test('new user: cancelling a run', { timeout: 300_000 }, async () => {
    await startRun('full');
    await page.click('#cancel');
    await waitRunIdle();
    assert.match(await text('#run-msg'), /cancelled/i);
    assert.equal(await page.isVisible('#run-msg'), true);
    assert.equal(await page.isDisabled('#cancel'), true);
  });

  test('new user: starting a second run while one is going', { timeout: 300_000 }, async () => {
    await startRun('full');
    await page.click('#run');
    assert.match(await text('#run-msg'), /already running/);
    assert.equal(await page.evaluate(() => document.body.dataset.run), 'running', 'the first run goes on');
    // Typing stays live while the benchmark runs.
    await typePair('Rain causes floods.', 'Floods cause rain.');
    assert.equal(await page.getAttribute('#score-model', 'data-state'), 'ready');
    await page.click('#cancel');
    await waitRunIdle();
  });

  test('new user: switching model mid-run cancels the run and loads the new model', { timeout: 600_000 }, async () => {
    const other = manifest.find((m) => m.name === 'all-MiniLM-L6-v2' && m.dtype === 'q4_0') ||
      manifest.find((m) => m.dtype !== 'q8_0');
    await startRun('full');
    await openModelPanel(page);
    await page.selectOption('#model-select', `${other.name}@${other.dtype}`);
    await waitRunIdle();
    await page.waitForFunction(() => /model was changed/.test(document.getElementById('run-msg').textContent), null, { timeout: 30_000 });
    await waitModelReady(other.dtype, 300_000);
    await page.waitForSelector('#score-model[data-state="ready"]', { timeout: 60_000 });
    assert.ok(Number.isFinite(await dataValue('#score-model')));
    assert.match(new URLSearchParams((await page.evaluate(() => location.hash)).slice(1)).get('dtype') || '', new RegExp(other.dtype));
  });

  test('keyboard: examples and buttons work without a mouse, with a visible focus ring', { timeout: 60_000 }, async () => {
    // From the structure group's last example, Tab moves on to the relation group's first.
    await page.focus('#examples .example-group:first-child button:last-of-type');
    await page.keyboard.press('Tab'); // keyboard focus, so :focus-visible applies
    assert.equal(await page.evaluate(() => document.activeElement.dataset.example), 'concept-order');
    const outline = await page.evaluate(() => getComputedStyle(document.activeElement).outlineStyle);
    await page.keyboard.press('Enter');
    assert.equal(await page.inputValue('#text-a'), 'Tom likes Taylor Swift.');
    assert.notEqual(outline, 'none', 'focused buttons show an outline');
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement.tagName), 'BUTTON');
    const unlabeled = await page.evaluate(() => [...document.querySelectorAll('input, select, textarea')]
      .filter((e) => e.type !== 'hidden' && !e.hidden && !(e.labels && e.labels.length) && !e.getAttribute('aria-label'))
      .map((e) => e.id || e.name));
    assert.deepEqual(unlabeled, [], 'every form control has a label');
    const divButtons = await page.locator('div[onclick], span[onclick], [role="button"]:not(button)').count();
    assert.equal(divButtons, 0);
  });

  test('phone and projector layouts', { timeout: 60_000 }, async () => {
    await page.click('button[data-example="concept-order"]');
    await page.waitForSelector('#score-model[data-state="ready"]', { timeout: 60_000 });
    await page.setViewportSize({ width: 390, height: 844 });
    assert.ok(await noSidewaysScroll(), 'no sideways scrolling on a phone');
    await page.evaluate(() => document.getElementById('verdict').scrollIntoView({ block: 'start' }));
    await page.screenshot({ path: path.join(ARTIFACTS, 'phone-playground.png') });
    await page.setViewportSize({ width: 1280, height: 720 });
    await page.click('#projector');
    const big = await page.evaluate(() => parseFloat(getComputedStyle(document.getElementById('score-model')).fontSize));
    assert.ok(big >= 64, `the similarity number is large on a projector (${big}px)`);
    await page.waitForFunction(() => document.getElementById('playground').getBoundingClientRect().top <= 1);
    const scoreBox = await page.locator('#score-model').boundingBox();
    assert.ok(scoreBox.y + scoreBox.height <= 720, 'projector mode shows the score without scrolling');
    await page.screenshot({ path: path.join(ARTIFACTS, 'projector-playground.png') });
    await page.click('#projector');
  });

  test('no request left the origin and nothing was logged as an error', () => {
    assert.deepEqual(external, [], 'requests to other origins');
    assert.deepEqual(consoleErrors, [], 'console errors');
  });
});
