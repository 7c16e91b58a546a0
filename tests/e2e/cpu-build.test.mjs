// The two CPU builds of the engine (issue 15, www/cpu-build.js): in this Chromium the page picks
// the relaxed-SIMD build and says so beside the backend; where relaxed SIMD is absent it picks
// the plain simd128 build and says so; `?cpu=simd128` forces the plain one; and both give the
// CLI's numbers (the playground's cosine within 1e-4, the quick split's table within ±0.01).
//
// "Absent" is simulated where the choice is made: in the page (init scripts do not run in
// workers; the engine is only told the page's choice), WebAssembly.validate rejects every module
// holding a relaxed SIMD instruction, as a browser without it does. Chromium has no switch that
// turns relaxed SIMD off (--js-flags=--no-experimental-wasm-relaxed-simd is ignored in 156).
// The requests show which .wasm each page really fetched (not counting the service worker's,
// which stores both for offline use).

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import {
  ACTIVE, PASSIVE, assertQuickTableEquals, launchChromium, loadDefaultModel, runBenchmarkInPage, scorePair, siteEnv,
  watchErrors,
} from './common.mjs';

const { base, expect } = siteEnv();
const RELAXED_WASM = '/pkg-relaxed/sr_bench_bg.wasm';
const PLAIN_WASM = '/pkg/sr_bench_bg.wasm';

/** In the page: WebAssembly.validate says no to any module with a relaxed SIMD opcode (0xfd then
 * a LEB128 opcode 0x100..0x113), as in a browser without relaxed SIMD. */
function withoutRelaxedSimd() {
  const validate = WebAssembly.validate;
  WebAssembly.validate = (bytes) => {
    const b = new Uint8Array(bytes.buffer ? bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) : bytes);
    for (let i = 0; i + 2 < b.length; i++) {
      const op = b[i + 1] & 0x80 ? (b[i + 1] & 0x7f) | (b[i + 2] << 7) : -1;
      if (b[i] === 0xfd && op >= 0x100 && op <= 0x113) return false;
    }
    return validate(bytes);
  };
}

describe('CPU builds: relaxed SIMD where the browser has it, simd128 otherwise', () => {
  let browser;
  const errors = [];
  /** The similarity and quick-split table of each build, for the comparison at the end. */
  const seen = {};

  before(async () => { browser = await launchChromium(); });
  after(async () => { await browser?.close(); });

  /** A fresh page at `query`; `wasm` collects the engine .wasm URLs it fetched. */
  async function open(query = '', { noRelaxed = false } = {}) {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
    watchErrors(context, errors);
    if (noRelaxed) await context.addInitScript(withoutRelaxedSimd);
    const wasm = [];
    context.on('request', (r) => {
      if (r.serviceWorker()) return; // the offline cache's own fetches (it stores both builds)
      const p = new URL(r.url()).pathname;
      if (p.endsWith('.wasm')) wasm.push(p);
    });
    const page = await context.newPage();
    await page.goto(new URL(query, base).href);
    return { context, page, wasm };
  }

  /** The build the page shows beside the backend, once the engine has said it. */
  async function shownBuild(page) {
    await page.waitForSelector('#cpu-build[data-build]:not([hidden])', { timeout: 60_000 });
    return { build: await page.getAttribute('#cpu-build', 'data-build'), text: await page.textContent('#cpu-build') };
  }

  /** Loads MiniLM q8_0, scores the pair and runs the quick split: all must equal the CLI. */
  async function checkNumbers(t, page, name) {
    await loadDefaultModel(page);
    const cosine = await scorePair(page, ACTIVE, PASSIVE);
    assert.ok(Math.abs(cosine - expect.active_passive_cosine) <= 1e-4,
      `${name}: active/passive cosine ${cosine} vs CLI ${expect.active_passive_cosine}`);
    await runBenchmarkInPage(page, 'quick');
    await assertQuickTableEquals(page, expect.quick_report);
    const table = await page.$$eval('[data-cell]', (cells) => Object.fromEntries(cells.map((c) => [c.dataset.cell, Number(c.dataset.value)])));
    seen[name] = { cosine, table, stsb: Number(await page.getAttribute('#stsb-test-value', 'data-value')) };
    t.diagnostic(`${name}: cosine ${cosine} (CLI ${expect.active_passive_cosine}), STS-B test ${seen[name].stsb}`);
  }

  /** A page with (or without) relaxed SIMD runs `build`, shows it, fetched only its .wasm, and
   * gives the CLI's numbers. */
  async function runsAndShows(t, build, { noRelaxed = false } = {}) {
    const { context, page, wasm } = await open('', { noRelaxed });
    assert.equal(await page.evaluate(async () => (await import('./cpu-build.js')).relaxedSimdSupported()), !noRelaxed,
      noRelaxed ? 'the simulation hides relaxed SIMD from the page' : 'this Chromium validates the relaxed SIMD probe');
    const shown = await shownBuild(page);
    assert.equal(shown.build, build);
    assert.match(shown.text, build === 'relaxed-simd' ? /\(relaxed SIMD\)/ : /\(WebAssembly SIMD\)/);
    await checkNumbers(t, page, build);
    // After a load the label comes from the model's backend_status().cpu_build (Rust), which the
    // run's JSON export records.
    assert.equal(await page.getAttribute('#cpu-build', 'data-build'), build);
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#export-json')]);
    const exported = JSON.parse(fs.readFileSync(await download.path(), 'utf8'));
    assert.equal(exported.backend_status.cpu_build, build, 'the JSON export records the CPU build');
    const [used, unused] = build === 'relaxed-simd' ? [RELAXED_WASM, PLAIN_WASM] : [PLAIN_WASM, RELAXED_WASM];
    assert.ok(wasm.includes(used) && !wasm.includes(unused), `only ${used} was fetched: ${wasm.join(', ')}`);
    await context.close();
  }

  test('Chromium has relaxed SIMD: the relaxed build runs, is shown, and equals the CLI', (t) => runsAndShows(t, 'relaxed-simd'));

  test('relaxed SIMD absent: the plain build runs, is shown, and equals the CLI',
    (t) => runsAndShows(t, 'simd128', { noRelaxed: true }));

  test('?cpu=simd128 forces the plain build; an unknown name is refused with a warning', async () => {
    const forced = await open('?cpu=simd128');
    assert.equal((await shownBuild(forced.page)).build, 'simd128');
    assert.deepEqual(forced.wasm, [PLAIN_WASM]);
    await forced.context.close();
    const unknown = await open('?cpu=avx512');
    assert.equal((await shownBuild(unknown.page)).build, 'relaxed-simd');
    assert.match(await unknown.page.textContent('#cpu-build-warning:not([hidden])'), /Unknown CPU build “avx512”/);
    await unknown.context.close();
  });

  test('both builds agree: cosine within 1e-4, every quick-split cell within ±0.01', () => {
    const [a, b] = [seen['relaxed-simd'], seen.simd128];
    assert.ok(a && b, 'both builds were run');
    assert.ok(Math.abs(a.cosine - b.cosine) <= 1e-4, `cosine: relaxed ${a.cosine} vs plain ${b.cosine}`);
    assert.ok(Math.abs(a.stsb - b.stsb) <= 0.01, `STS-B test: relaxed ${a.stsb} vs plain ${b.stsb}`);
    assert.deepEqual(Object.keys(a.table).sort(), Object.keys(b.table).sort());
    for (const [cell, v] of Object.entries(a.table)) {
      assert.ok(Math.abs(v - b.table[cell]) <= 0.01, `${cell}: relaxed ${v} vs plain ${b.table[cell]}`);
    }
    assert.deepEqual(errors, [], 'no console, page or worker errors');
  });
});
