// E2E of the benchmark panel's probes: with MiniLM q8_0, one quick run with both probes
// ticked (the word-order probe with 1 seed, to keep the test short); every number the page
// shows must equal the CLI's `sr-bench probe layers|shuffle --json` on the same file.
//
//   SR_BENCH_URL=http://127.0.0.1:PORT/  SR_BENCH_EXPECT=tests/artifacts/e2e-expect.json
//   SR_BENCH_CLI=path/to/sr-bench        node --test tests/e2e/probes.full.test.mjs
// (all three required). Also reads tests/artifacts/eval-quick.q8_0.json (the CLI's quick report).

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import {
  ARTIFACTS, RUN_TIMEOUT, assertQuickTableEquals, cliJson, dataValue, launchChromium, loadDefaultModel,
  runBenchmarkInPage, siteEnv, watchErrors,
} from './common.mjs';

const MODEL = 'www/models/all-MiniLM-L6-v2.q8_0.gguf';
/** Spearman / Pearson ×100 are rounded to 2 decimals by Rust on both sides: equal within 0.01,
 * one unit of the last decimal, counted in hundredths (82 − 82.01 is 0.010000000000005 in f64). */
const TOL = 0.01;
const close = (a, b) => (a === null && b === null) || Math.round(Math.abs(a - b) / TOL) <= 1;

describe('benchmark-panel probes', () => {
  let browser;
  let page;
  let env;
  const errors = [];
  const cli = {};
  const quickReport = () => JSON.parse(fs.readFileSync(path.join(ARTIFACTS, 'eval-quick.q8_0.json'), 'utf8'));

  before(async () => {
    env = siteEnv();
    browser = await launchChromium();
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
    watchErrors(context, errors);
    page = await context.newPage();
  });
  after(async () => { if (browser) await browser.close(); });

  test('the CLI probes (the reference)', { timeout: 600_000 }, async (t) => {
    for (const [kind, args] of [['layers', ['--split', 'quick']], ['shuffle', ['--seeds', '1', '--sr', 'quick']]]) {
      const t0 = Date.now();
      cli[kind] = cliJson(['probe', kind, '--model', MODEL, ...args]);
      t.diagnostic(`sr-bench probe ${kind}: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    }
  });

  test('a quick run with both probes ticked shows progress and finishes', { timeout: RUN_TIMEOUT }, async (t) => {
    await page.goto(env.base);
    await loadDefaultModel(page);
    await page.check('#probe-shuffle');
    await page.fill('#probe-seeds', '1');
    await page.check('#probe-layers');
    const t0 = Date.now();
    const sawProbe = new Set();
    const watching = (async () => {
      while (await page.evaluate(() => document.body.dataset.run !== 'idle').catch(() => false)) {
        const kind = await page.getAttribute('#run-stats', 'data-probe').catch(() => null);
        if (kind && /pairs/.test(await page.textContent('#run-stats'))) sawProbe.add(kind);
        await page.waitForTimeout(500);
      }
    })();
    const msg = await runBenchmarkInPage(page, 'quick');
    await watching;
    t.diagnostic(`benchmark + both probes in the page: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    assert.match(msg, /Probes done/);
    assert.deepEqual([...sawProbe].sort(), ['layers', 'shuffle'], 'a progress line for each probe');
    await assertQuickTableEquals(page, quickReport());
  });

  test('layer probe: every number equals `sr-bench probe layers --json`; the last layer is the ordinary run', { timeout: 60_000 }, async (t) => {
    const want = cli.layers;
    assert.ok(want, 'the CLI reference ran');
    assert.equal(await page.isVisible('#probe-layers-box'), true);
    const rows = await page.locator('#layers-body tr').count();
    assert.equal(rows, want.layers.length, 'one row per layer (0 = embedding output)');
    for (const row of want.layers) {
      for (const key of ['structure_avg', 'relation_avg', 'stsb_test']) {
        const got = await dataValue(page, `#layers-body tr[data-layer="${row.layer}"] td.${key}`);
        assert.ok(close(got, row[key]), `layer ${row.layer} ${key}: page ${got} vs CLI ${row[key]}`);
      }
    }
    // The chart: three lines over layers 0..L, the same values.
    const chart = await page.evaluate(() => {
      const c = globalThis.Chart.getChart(document.getElementById('probe-layers-chart'));
      return { labels: c.data.labels, data: c.data.datasets.map((d) => d.data) };
    });
    const keys = ['structure_avg', 'relation_avg', 'stsb_test'];
    assert.deepEqual(chart.labels, want.layers.map((r) => r.layer));
    keys.forEach((k, i) => want.layers.forEach((r, layer) => {
      assert.ok(close(chart.data[i][layer], r[k]), `chart: layer ${layer} ${k}: page ${chart.data[i][layer]} vs CLI ${r[k]}`);
    }));
    const last = want.layers.at(-1);
    const q = quickReport();
    assert.ok(close(last.structure_avg, q.results.structure.avg_spearman), 'last layer = ordinary structure avg');
    assert.ok(close(last.relation_avg, q.results.relation.avg_spearman), 'last layer = ordinary relation avg');
    assert.ok(close(last.stsb_test, q.stsb_test.spearman), 'last layer = ordinary STS-B test');
    assert.match(await page.textContent('#layers-cli'), /sr-bench probe layers --model all-MiniLM-L6-v2\.q8_0\.gguf --split quick/);
    const [d] = await Promise.all([page.waitForEvent('download'), page.click('#layers-json')]);
    const json = JSON.parse(fs.readFileSync(await d.path(), 'utf8'));
    // The download is the probe's JSON: the CLI's shape, the chart's numbers.
    assert.deepEqual(Object.keys(json).filter((k) => k !== 'timings').sort(), Object.keys(want).sort());
    assert.deepEqual(keys.map((k) => json.layers.map((r) => r[k])), chart.data);
    t.diagnostic(`layer probe in the page: ${json.timings.pairs} pairs in ${(json.timings.probe_ms / 1000).toFixed(1)} s`);
  });

  test('word-order probe: the table and the finding equal `sr-bench probe shuffle --seeds 1 --json`', { timeout: 60_000 }, async (t) => {
    const want = cli.shuffle;
    assert.ok(want, 'the CLI reference ran');
    const cell = (row, col) => dataValue(page, `#shuffle-body tr[data-row="${row}"] td:nth-of-type(${col})`);
    const expected = [
      ['stsb-spearman', want.stsb_test.spearman, want.shuffled.spearman_mean],
      ['stsb-pearson', want.stsb_test.pearson, want.shuffled.pearson_mean],
      ['sr-structure', want.sr.structure_avg, want.sr.structure_avg_shuffled_mean],
      ['sr-relation', want.sr.relation_avg, want.sr.relation_avg_shuffled_mean],
    ];
    for (const [row, ordinary, shuffled] of expected) {
      assert.ok(close(await cell(row, 1), ordinary), `${row} ordinary: page ${await cell(row, 1)} vs CLI ${ordinary}`);
      assert.ok(close(await cell(row, 2), shuffled), `${row} shuffled: page ${await cell(row, 2)} vs CLI ${shuffled}`);
    }
    const finding = await page.textContent('#shuffle-finding');
    assert.equal(finding, want.finding);
    assert.ok(finding.includes(want.shuffled.spearman_mean.toFixed(2)) && finding.includes(want.stsb_test.spearman.toFixed(2)),
      `the finding states the measured numbers: ${finding}`);
    // The ordinary STS-B Spearman is the benchmark's own.
    assert.ok(close(want.stsb_test.spearman, await dataValue(page, '#stsb-test-value')));
    t.diagnostic(finding);
    const [d] = await Promise.all([page.waitForEvent('download'), page.click('#shuffle-json')]);
    const json = JSON.parse(fs.readFileSync(await d.path(), 'utf8'));
    assert.equal(json.finding, want.finding, 'the downloaded JSON is the probe\'s');
    t.diagnostic(`word-order probe (1 seed) in the page: ${json.timings.pairs} pairs in ${(json.timings.probe_ms / 1000).toFixed(1)} s`);
    await page.locator('#probes').screenshot({ path: path.join(ARTIFACTS, 'probes.png') });
  });

  test('cancel stops a probe like a benchmark', { timeout: RUN_TIMEOUT }, async () => {
    await page.uncheck('#probe-shuffle');
    await page.check('#probe-layers');
    await page.check('input[name="split"][value="quick"]');
    await page.click('#run');
    await page.waitForFunction(() => document.getElementById('run-stats').dataset.probe === 'layers' &&
      Number(document.getElementById('run-stats').dataset.done || 0) > 0, null, { timeout: RUN_TIMEOUT });
    await page.click('#cancel');
    await page.waitForFunction(() => document.body.dataset.run === 'idle', null, { timeout: 60_000 });
    assert.equal(await page.textContent('#run-msg'), 'Layer probe cancelled.');
  });

  test('nothing was logged as an error', () => {
    assert.deepEqual(errors, []);
  });
});
