// A long class (soak): one tab through 20 model switches (MiniLM q8_0 / f32 / q4_0, MPNet
// q8_0), 10 quick runs (most cancelled early, by the Cancel button or by a model switch), 200
// playground edits, and a second tab running at the same time. Checked: the page keeps answering
// (a page round-trip < 1 s while runs go), every run that finishes equals the CLI's quick report
// (finished runs are all MiniLM q8_0, whose CLI report is SR_BENCH_EXPECT's quick_report; runs on
// the other models are cancelled), no numbers of a cancelled run are shown, and the workers'
// memory stays bounded: per worker kind, its wasm memory (the `srBenchWasmBytes` diagnostic) and,
// where the browser has it, performance.measureUserAgentSpecificMemory (JS heap, per worker).
// Figures are printed as test diagnostics. Environment: see common.mjs.

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  assertQuickTableEquals, expected, launchChromium, siteUrl, startRun, waitModelReady, waitRunDone, wasmBytes, workersOf,
} from './common.mjs';

const BASE = siteUrl();
const EXPECT = expected(['quick_report']);
const MiB = 1024 * 1024;
const MODELS = [['all-MiniLM-L6-v2', 'q8_0'], ['all-MiniLM-L6-v2', 'f32'], ['all-MiniLM-L6-v2', 'q4_0'], ['all-mpnet-base-v2', 'q8_0']];
const SWITCHES = 20;
const EDITS_PER_SWITCH = 10; // 200 edits
/** Switches after which a run starts (with the two before the loop: 10 runs in the first tab). */
const RUN_AT = new Set([1, 3, 5, 7, 9, 12, 14, 17]);
/** Runs left running into the next switch (cancelled by the model change). */
const CANCEL_BY_SWITCH = new Set([5, 14]);
/** The run at this switch (MiniLM q8_0) finishes, while the second tab runs too. */
const FINISH_AT = 12;
/** Bounds: a page round-trip while runs go; growth of a worker's memory after the first cycle of models. */
const ROUND_TRIP_MS = 1000;
const WASM_MARGIN = 32 * MiB;
const JS_MARGIN = 32 * MiB;
const SENTENCES = ['The chef cooked the meal.', 'The meal was cooked by the chef.', 'Tom likes Taylor Swift.',
  'Taylor Swift likes Tom.', 'After the rain stopped, we went out.', 'We went out after the rain stopped.'];

const modelOf = (i) => MODELS[i % MODELS.length];
const label = ([name, dtype]) => `${name} · ${dtype}`;
const fmt = (b) => `${(b / MiB).toFixed(1)} MiB`;

describe('a long class (soak)', () => {
  let browser;
  let context;
  let page;
  let page2 = null;
  let slowestRoundTrip = 0;
  let slowestRoundTripAt = '';
  const scoreWaits = [];
  /** Per worker kind: wasm bytes at each sample, in order ({at, bytes}, the largest worker of the kind). */
  const wasm = { engine: [], helper: [] };
  const jsHeap = {};
  let runs = 0;
  let finished = 0;
  let cancelled = 0;
  let edits = 0;
  let switches = 0;
  const t0 = Date.now();

  async function sampleWasm(at, model) {
    for (const kind of ['engine', 'helper']) {
      const sizes = [];
      for (const w of workersOf(page, kind)) {
        const b = await wasmBytes(w).catch(() => NaN); // a worker closing just now
        if (Number.isFinite(b)) sizes.push(b);
      }
      if (sizes.length) wasm[kind].push({ at: `${at} (${label(model)})`, model: label(model), bytes: Math.max(...sizes), count: sizes.length });
    }
  }

  /** measureUserAgentSpecificMemory (needs cross-origin isolation: the server sends COOP/COEP), per kind. */
  async function sampleJsHeap(at) {
    const m = await page.evaluate(async () => (self.crossOriginIsolated && performance.measureUserAgentSpecificMemory
      ? performance.measureUserAgentSpecificMemory() : null));
    if (!m) return;
    const byKind = { page: 0, engine: 0, helper: 0, total: m.bytes };
    for (const entry of m.breakdown) {
      const a = entry.attribution[0];
      if (!a) continue;
      const path = new URL(a.url).pathname;
      const kind = path.endsWith('/worker.js') ? 'engine' : path.endsWith('/embed-worker.js') ? 'helper' : 'page';
      byKind[kind] += entry.bytes;
    }
    jsHeap[at] = byKind;
  }

  /** One round-trip to the page (reading the run's progress), keeping the slowest. */
  async function roundTrip(p, at) {
    const s = Date.now();
    const done = await p.evaluate(() => document.getElementById('run-stats').dataset.done || '?');
    if (Date.now() - s > slowestRoundTrip) {
      slowestRoundTrip = Date.now() - s;
      slowestRoundTripAt = `${at}, at ${done} sentences`;
    }
  }

  /** Round-trips to the page every 250 ms until `done()`. */
  async function watchRoundTrips(p, done, at) {
    while (!(await done())) {
      await roundTrip(p, at);
      await p.waitForTimeout(250);
    }
  }

  const runIdle = (p) => () => p.evaluate(() => document.body.dataset.run === 'idle');

  /** `n` quick edits of the two texts (as typing does), then the score must come. */
  async function edit(n) {
    for (let k = 0; k < n; k++, edits++) {
      const a = SENTENCES[edits % SENTENCES.length];
      const b = `${SENTENCES[(edits + 1) % SENTENCES.length]}${' again'.repeat(edits % 3)}`;
      await page.fill(edits % 2 ? '#text-b' : '#text-a', edits % 2 ? b : a);
    }
    const s = Date.now();
    await page.waitForSelector('#score-model:not([data-state="pending"])', { timeout: 60_000 });
    scoreWaits.push(Date.now() - s);
    assert.equal(await page.getAttribute('#score-model', 'data-state'), 'ready', `score after edit ${edits}`);
  }

  async function cancelRun(p) {
    await p.click('#cancel');
    await waitRunDone(p, 60_000);
    assert.match(await p.textContent('#run-msg'), /cancelled/i);
    cancelled++;
  }

  before(async () => {
    browser = await launchChromium(['--enable-blink-features=ForceEagerMeasureMemory']);
    context = await browser.newContext();
    page = await context.newPage();
    await page.goto(BASE);
    await page.waitForSelector('#model-select:not([disabled])');
    await page.click('#model-load');
    await waitModelReady(page, label(MODELS[0]));
  });

  after(async () => {
    if (browser) await browser.close();
  });

  test('first runs: one cancelled, then one to the end on the same helpers, equal to the CLI', { timeout: 300_000 }, async () => {
    await sampleWasm('first load', MODELS[0]);
    await sampleJsHeap('first load');
    await startRun(page);
    runs++;
    await cancelRun(page);
    assert.equal(await page.isHidden('#results'), true, 'a cancelled run shows no table');
    await startRun(page);
    runs++;
    await watchRoundTrips(page, runIdle(page), 'the first finished run');
    assert.match(await page.textContent('#run-msg'), /^Done/);
    await assertQuickTableEquals(page, EXPECT.quick_report);
    finished++;
    await sampleWasm('first finished run', MODELS[0]);
    await sampleJsHeap('first finished run');
  });

  test('20 model switches, 200 edits, 10 runs in all, a second tab at the same time', { timeout: 900_000 }, async () => {
    for (let i = 1; i <= SWITCHES; i++) {
      const model = modelOf(i);
      const caption = await page.textContent('#results-caption');
      await page.selectOption('#model-select', `${model[0]}@${model[1]}`); // loads it (the page was engaged)
      await waitModelReady(page, label(model));
      switches++;
      if (CANCEL_BY_SWITCH.has(i - 1)) {
        await waitRunDone(page, 60_000);
        assert.match(await page.textContent('#run-msg'), /cancelled because the model was changed/);
        cancelled++;
      }
      assert.equal(await page.textContent('#results-caption'), caption, 'no numbers of a cancelled run');
      await edit(EDITS_PER_SWITCH);
      if (i === FINISH_AT - 1) { // the second tab: the same site, the model from the browser cache
        page2 = await context.newPage();
        await page2.goto(BASE);
        await waitModelReady(page2, label(MODELS[0]));
      }
      if (RUN_AT.has(i)) {
        await startRun(page);
        runs++;
        if (i === FINISH_AT) {
          assert.deepEqual(model, MODELS[0], 'finished runs are MiniLM q8_0 (the CLI report we have)');
          await startRun(page2);
          await edit(EDITS_PER_SWITCH); // the playground answers while both tabs run
          await Promise.all([watchRoundTrips(page, runIdle(page), 'two tabs, first'), watchRoundTrips(page2, runIdle(page2), 'two tabs, second')]);
          for (const p of [page, page2]) {
            assert.match(await p.textContent('#run-msg'), /^Done/);
            await assertQuickTableEquals(p, EXPECT.quick_report);
            finished++;
          }
          await page2.close();
        } else if (!CANCEL_BY_SWITCH.has(i)) {
          await roundTrip(page, `run at switch ${i}`);
          await cancelRun(page);
        }
      }
      await sampleWasm(`switch ${i}`, model);
      if (i === FINISH_AT) await sampleJsHeap('two-tab run'); // the second tab is closed by now
    }
    await sampleJsHeap('end');
    assert.equal(switches, SWITCHES);
    assert.equal(runs, 10);
    assert.equal(edits, SWITCHES * EDITS_PER_SWITCH + EDITS_PER_SWITCH);
  });

  test('the page kept answering and the workers\' memory stayed bounded', async (t) => {
    t.diagnostic(`${switches} switches, ${runs} runs in the first tab (${finished} finished, all tabs; ${cancelled} cancelled), ` +
      `${edits} edits, wall ${((Date.now() - t0) / 1000).toFixed(0)} s`);
    t.diagnostic(`slowest page round-trip while runs went: ${slowestRoundTrip} ms (${slowestRoundTripAt}); score after a burst of edits: ` +
      `median ${scoreWaits.sort((a, b) => a - b)[scoreWaits.length >> 1]} ms, slowest ${scoreWaits.at(-1)} ms`);
    assert.ok(slowestRoundTrip < ROUND_TRIP_MS, `page round-trip ${slowestRoundTrip} ms`);
    for (const kind of ['engine', 'helper']) {
      const s = wasm[kind];
      assert.ok(s.length > 0, `${kind}: sampled`);
      const peak = Math.max(...s.map((x) => x.bytes));
      t.diagnostic(`${kind} wasm memory: start ${fmt(s[0].bytes)} (${s[0].at}), peak ${fmt(peak)}, end ${fmt(s.at(-1).bytes)} (${s.at(-1).at}); ` +
        `most ${kind} workers at once: ${Math.max(...s.map((x) => x.count))}`);
      t.diagnostic(`${kind} wasm memory by sample (MiB): ${s.map((x) => (x.bytes / MiB).toFixed(0)).join(' ')}`);
    }
    // The engine holds one model at a time: after one cycle through the four models its memory
    // (which only grows) must not grow further.
    const engine = wasm.engine.filter((x) => x.at.startsWith('switch '));
    assert.equal(engine.length, SWITCHES, 'the engine was sampled after every switch');
    const afterCycle = engine[MODELS.length - 1].bytes;
    for (const x of engine.slice(MODELS.length)) {
      assert.ok(x.bytes <= afterCycle + WASM_MARGIN, `engine wasm ${fmt(x.bytes)} at ${x.at} > ${fmt(afterCycle)} after the first cycle + ${fmt(WASM_MARGIN)}`);
    }
    // Helpers: one pool alive at most (one per core, at most 8), and a helper of a model no
    // bigger than the first helper of that model (a pool kept across runs does not grow).
    const cores = await page.evaluate(() => navigator.hardwareConcurrency);
    assert.ok(Math.max(...wasm.helper.map((x) => x.count)) <= Math.min(8, cores), 'no helpers left over from earlier pools');
    const firstOfModel = new Map();
    for (const x of wasm.helper) {
      if (!firstOfModel.has(x.model)) firstOfModel.set(x.model, x);
      const first = firstOfModel.get(x.model);
      assert.ok(x.bytes <= first.bytes + WASM_MARGIN, `helper of ${x.model}: ${fmt(x.bytes)} at ${x.at} > ${fmt(first.bytes)} at ${first.at} + ${fmt(WASM_MARGIN)}`);
    }
    if (jsHeap.end) {
      for (const kind of ['page', 'engine', 'helper', 'total']) {
        t.diagnostic(`JS heap (measureUserAgentSpecificMemory) ${kind}: ` +
          Object.entries(jsHeap).map(([at, k]) => `${at} ${fmt(k[kind])}`).join(', '));
      }
      // Like against like: the engine alone (first load, end: MiniLM q8_0, no pool), and the
      // helpers after a finished MiniLM q8_0 run (the first, and the two-tab one 9 switches later).
      assert.ok(jsHeap.end.engine <= jsHeap['first load'].engine + JS_MARGIN, 'the engine\'s JS heap is back near its first-load size');
      assert.ok(jsHeap.end.total <= jsHeap['first load'].total + JS_MARGIN, 'the page\'s JS heap is back near its first-load size');
      assert.ok(jsHeap['two-tab run'].helper <= jsHeap['first finished run'].helper + JS_MARGIN, 'the helpers\' JS heap did not grow');
    } else {
      t.diagnostic('measureUserAgentSpecificMemory is not available here (it needs cross-origin isolation)');
    }
  });
});
