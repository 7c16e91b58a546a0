// Drives the comparison pages (bench/web/cmp-*.html, assembled by compare-transformersjs.sh) in
// headless Chromium, one system after the other, and prints the figures.
// Usage: node bench/compare-transformersjs.mjs http://127.0.0.1:PORT/
//   env FULL=0: the 2,000 sample only; MPNET=0: no MPNet line.
import { writeFileSync, mkdirSync } from 'node:fs';
import { chromium } from 'playwright-core';

const base = process.argv[2];
const full = process.env.FULL !== '0';
/** Query parameters for our page (cmp-srbench.html). */
const ourQuery = process.env.MPNET === '0' ? 'mpnet=0' : '';
const origin = new URL(base).origin;
const external = [];
const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-background-networking',
    '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic'],
});

async function runPage(path) {
  const context = await browser.newContext();
  context.on('request', (r) => {
    const u = r.url();
    if (!u.startsWith('data:') && !u.startsWith('blob:') && new URL(u).origin !== origin) external.push(u);
  });
  const page = await context.newPage();
  page.on('console', (m) => { if (m.type() === 'error') console.error(`  console (${path}): ${m.text()}`); });
  page.on('pageerror', (e) => console.error(`  page error (${path}): ${e.message}`));
  await page.goto(new URL(path + (full ? '' : (path.includes('?') ? '&' : '?') + 'full=0'), base).href);
  await page.locator('#results[data-json], #results[data-error]').waitFor({ state: 'attached', timeout: 90 * 60_000 });
  const error = await page.locator('#results').getAttribute('data-error');
  if (error) throw new Error(`${path}: ${error}`);
  const r = JSON.parse(await page.locator('#results').getAttribute('data-json'));
  await context.close();
  return r;
}

/** Cold start of the demo page with the model in the Cache API: navigation start → first embedding. */
async function coldStart() {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.addInitScript(() => {
    const obs = new MutationObserver(() => {
      const el = document.getElementById('score-model');
      if (el && el.dataset.state === 'ready' && !globalThis.__firstEmbedding) globalThis.__firstEmbedding = performance.now();
    });
    obs.observe(document, { subtree: true, attributes: true, childList: true });
  });
  const times = [];
  for (let i = 0; i < 4; i++) {
    const hash = '#a=The%20chef%20cooked%20the%20meal.&b=The%20meal%20was%20cooked%20by%20the%20chef.&model=all-MiniLM-L6-v2&dtype=q8_0';
    if (i === 0) {
      // First visit: the page waits for a click before a download; later visits load from the cache.
      await page.goto(new URL(hash, base).href);
      await page.click('#model-load');
    } else {
      await page.reload();
    }
    await page.waitForFunction(() => globalThis.__firstEmbedding, null, { timeout: 120_000 });
    const source = await page.getAttribute('#model-status', 'data-source');
    times.push({ ms: await page.evaluate(() => globalThis.__firstEmbedding), source });
  }
  await context.close();
  return times;
}

try {
  const fmt = (x, d = 1) => (x == null ? '—' : x.toFixed(d));
  const ours = await runPage(`cmp-srbench.html${ourQuery ? `?${ourQuery}` : ''}`);
  const tjs = await runPage(process.env.SHUFFLED === '0' ? 'cmp-tjs.html?shuffled=0' : 'cmp-tjs.html');
  mkdirSync(new URL('./out/', import.meta.url), { recursive: true });
  if (full) {
    writeFileSync(new URL('./out/srbench-full.json', import.meta.url), JSON.stringify(ours.report));
    writeFileSync(new URL('./out/tjs-full.json', import.meta.url), JSON.stringify(tjs.report));
  }
  writeFileSync(new URL('./out/compare.json', import.meta.url), JSON.stringify({ ours, tjs }, null, 1));
  console.log(`headless Chromium: ${ours.userAgent}`);
  console.log(`cores ${ours.cores}, cross-origin isolated: ${ours.isolated && tjs.isolated}`);
  console.log(`workload: sample 2,000 SR sentences; full ${ours.total} unique SR sentences ` +
    `(${ours.tokens} tokens; ${ours.padded_tokens} positions when padded per batch of 32 in length order)`);
  console.log('');
  console.log(`${'system'.padEnd(50)} ${'cold load'.padStart(10)} ${'sample s/s'.padStart(11)} ${'full s/s'.padStart(9)} ${'full time'.padStart(10)}`);
  for (const [name, r] of [[`sr-bench q8_0, ${ours.threads} Web Workers (wasm)`, ours], [`transformers.js 3.8.1 int8, ${tjs.threads} ORT threads`, tjs]]) {
    console.log(`${name.padEnd(50)} ${(fmt(r.load_ms / 1000, 2) + ' s').padStart(10)} ${fmt(r.sample.sentences_per_s).padStart(11)} ` +
      `${fmt(r.full?.sentences_per_s).padStart(9)} ${(r.full ? fmt(r.full.seconds, 0) + ' s' : '—').padStart(10)}`);
  }
  console.log('');
  console.log(`ratio sr-bench / transformers.js (both fed the same length-sorted chunks): sample ${fmt(ours.sample.sentences_per_s / tjs.sample.sentences_per_s, 2)}×` +
    (full ? `, full ${fmt(ours.full.sentences_per_s / tjs.full.sentences_per_s, 2)}×` : ''));
  if (tjs.full_shuffled) {
    const r = tjs.full_shuffled;
    console.log(`transformers.js, full set in a seeded random order (no length sort; ${r.padded_tokens} padded positions): ` +
      `${fmt(r.sentences_per_s)} sentences/s (${fmt(r.seconds, 0)} s) → ratio sr-bench / that: ${fmt(ours.full.sentences_per_s / r.sentences_per_s, 2)}×`);
  }
  if (ours.mpnet) {
    const m = ours.mpnet;
    console.log(`MPNet q8_0 (sr-bench, ${m.threads} Web Workers): cold load ${fmt(m.load_ms / 1000, 2)} s, ` +
      `sample ${fmt(m.sample.sentences_per_s)} sentences/s` +
      (m.full ? `; full SR ${m.full.sentences} sentences ${fmt(m.full.seconds, 0)} s (${fmt(m.full.sentences_per_s)}/s)` +
        `; quick split ${m.quick.sentences} sentences (SR quick + STS-B test) ${fmt(m.quick.seconds, 0)} s` : ''));
    if (m.full) {
      console.log(`MPNet SR avg Spearman: full structure ${m.full.structure}, relation ${m.full.relation}; ` +
        `quick structure ${m.quick.structure}, relation ${m.quick.relation}, STS-B test ${m.quick.stsb_test}`);
    }
  }
  try {
    const cold = await coldStart();
    console.log(`cold start of the demo page (navigation → first embedding), model cached: ` +
      cold.slice(1).map((c) => `${fmt(c.ms, 0)} ms (${c.source})`).join(', ') + `; first visit (download, after the click) ${fmt(cold[0].ms, 0)} ms`);
  } catch (e) {
    console.log(`cold start: not measured (${e.message})`);
    process.exitCode = 1;
  }
  if (full) {
    for (const [name, r] of [['sr-bench', ours], ['transformers.js', tjs]]) {
      const res = r.report.results;
      console.log(`${name} SR avg Spearman: structure ${res.structure.avg_spearman}, relation ${res.relation.avg_spearman}`);
    }
  }
  console.log(`requests that left ${origin}: ${external.length}${external.length ? ' ' + external.slice(0, 5).join(', ') : ''}`);
  if (external.length) process.exitCode = 1;
} finally {
  await browser.close();
}
