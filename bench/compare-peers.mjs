// Drives the comparison pages (bench/web/cmp-*.html, assembled by compare-peers.sh) in headless
// Chromium, one system after the other, and prints the figures.
// Usage: node bench/compare-peers.mjs http://127.0.0.1:PORT/ http://127.0.0.1:STATIC_PORT/
//   (the second: the same site without the site's CSP, for the peers: both start blob: code)
//   env FULL=0: the 2,000 sample only; MPNET=0: no MPNet lines; PEERS=tjs,wllama (the default;
//   tjs runs int8 and fp32 MiniLM and, with MPNet, fp32 MPNet);
//   LLAMA=0: no parity line for llama.cpp's own file; MODERN=0: no nomic-bert section (the
//   random nomic-bert file in MiniLM's shape, llama/ on the site, sr-bench's pool against wllama).
import { writeFileSync, mkdirSync, readFileSync } from 'node:fs';
import { chromium } from 'playwright-core';

const [base, staticBase] = process.argv.slice(2);
const full = process.env.FULL !== '0';
const peers = (process.env.PEERS || 'tjs,wllama').split(',');
const modern = process.env.MODERN !== '0';
/** Query parameters for our page (cmp-srbench.html). */
const ourQuery = [process.env.MPNET === '0' && 'mpnet=0', modern && 'modern=1'].filter(Boolean).join('&');
/** Query parameters for wllama's page (cmp-wllama.html). */
const wllamaQuery = [process.env.LLAMA === '0' && 'llama=0', modern && 'modern=1'].filter(Boolean).join('&');
const origins = [new URL(base).origin, new URL(staticBase).origin];
const external = [];
const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-background-networking',
    '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic'],
});

async function runPage(path, at = base) {
  const context = await browser.newContext();
  context.on('request', (r) => {
    const u = r.url();
    if (!u.startsWith('data:') && !u.startsWith('blob:') && !origins.includes(new URL(u).origin)) external.push(u);
  });
  const page = await context.newPage();
  page.on('console', (m) => { if (m.type() === 'error') console.error(`  console (${path}): ${m.text()}`); });
  page.on('pageerror', (e) => console.error(`  page error (${path}): ${e.message}`));
  await page.goto(new URL(path + (full ? '' : (path.includes('?') ? '&' : '?') + 'full=0'), at).href);
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
      // First visit: the page downloads the default model on arrival; later visits load it
      // from the cache.
      await page.goto(new URL(hash, base).href);
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
  const pair = (x) => `${x.min.toFixed(6)} / ${x.mean.toFixed(6)}`;
  const ours = await runPage(`cmp-srbench.html${ourQuery ? `?${ourQuery}` : ''}`);
  const tjsPage = (query) => (peers.includes('tjs') ? runPage(`cmp-tjs.html${query}`, staticBase) : null);
  const tjs = await tjsPage(process.env.SHUFFLED === '0' ? '?shuffled=0' : '');
  // fp32: ONNX files exported here from the pinned wheels (bench/export_onnx.py); MPNet has no
  // int8 peer (onnxruntime's dynamic quantisation breaks it: docs/benchmarks.md).
  const tjsFp32 = await tjsPage('?dtype=fp32');
  const tjsMpnet = ours.mpnet ? await tjsPage('?model=all-mpnet-base-v2&dtype=fp32') : null;
  const wllama = peers.includes('wllama')
    ? await runPage(`cmp-wllama.html${wllamaQuery ? `?${wllamaQuery}` : ''}`, staticBase) : null;
  mkdirSync(new URL('./out/', import.meta.url), { recursive: true });
  if (full) {
    for (const [name, r] of [['srbench', ours], ['tjs', tjs], ['tjs-fp32', tjsFp32], ['tjs-mpnet', tjsMpnet], ['wllama', wllama]]) {
      if (r) writeFileSync(new URL(`./out/${name}-full.json`, import.meta.url), JSON.stringify(r.report));
    }
  }
  writeFileSync(new URL('./out/compare.json', import.meta.url), JSON.stringify({ ours, tjs, tjsFp32, tjsMpnet, wllama }, null, 1));
  const tjsVersion = JSON.parse(readFileSync(new URL('./node_modules/@huggingface/transformers/package.json', import.meta.url), 'utf8')).version;
  const wllamaVersion = JSON.parse(readFileSync(new URL('./node_modules/@wllama/wllama/package.json', import.meta.url), 'utf8')).version;
  const rows = [[`sr-bench q8_0, ${ours.threads} Web Workers (wasm)`, ours]];
  if (tjs) rows.push([`transformers.js ${tjsVersion} int8, ${tjs.threads} ORT threads`, tjs]);
  if (tjsFp32) rows.push([`transformers.js ${tjsVersion} fp32, ${tjsFp32.threads} ORT threads`, tjsFp32]);
  if (wllama) rows.push([`wllama ${wllamaVersion} (llama.cpp ${wllama.version}) q8_0, ${wllama.threads} threads`, wllama]);
  console.log(`headless Chromium: ${ours.userAgent}`);
  console.log(`cores ${ours.cores}, cross-origin isolated: ${rows.every(([, r]) => r.isolated)}`);
  console.log(`workload: sample 2,000 SR sentences; full ${ours.total} unique SR sentences ` +
    `(${ours.tokens} tokens; ${ours.padded_tokens} positions when padded per batch of 32 in length order)`);
  console.log('');
  console.log(`${'system'.padEnd(62)} ${'cold load'.padStart(10)} ${'sample s/s'.padStart(11)} ${'full s/s'.padStart(9)} ${'full time'.padStart(10)} ${'ratio'.padStart(6)}`);
  for (const [name, r] of rows) {
    const ratio = full ? ours.full.sentences_per_s / r.full.sentences_per_s : ours.sample.sentences_per_s / r.sample.sentences_per_s;
    console.log(`${name.padEnd(62)} ${(fmt(r.load_ms / 1000, 2) + ' s').padStart(10)} ${fmt(r.sample.sentences_per_s).padStart(11)} ` +
      `${fmt(r.full?.sentences_per_s).padStart(9)} ${(r.full ? fmt(r.full.seconds, 0) + ' s' : '—').padStart(10)} ${(fmt(ratio, 2) + '×').padStart(6)}`);
  }
  console.log(`(ratio: sr-bench's sentences/s over the row's, ${full ? 'full set' : 'sample'}; every system fed the same length-sorted chunks)`);
  console.log('');
  console.log(`parity on MiniLM's 82 reference texts (${ours.parity.ours_file.texts} texts; a text over 256 tokens cut at the last word that fits, for every engine):`);
  console.log(`${'engine'.padEnd(62)} ${'vs sentence-transformers min / mean'.padStart(36)} ${'vs sr-bench min / mean'.padStart(24)}`);
  const parityRows = [['sr-bench q8_0 (pool)', ours.parity.ours_file]];
  if (tjs) parityRows.push([`transformers.js ${tjsVersion} int8`, tjs.parity.onnx]);
  if (tjsFp32) parityRows.push([`transformers.js ${tjsVersion} fp32`, tjsFp32.parity.onnx]);
  if (wllama) parityRows.push([`wllama ${wllamaVersion} on our q8_0 file`, wllama.parity.ours_file]);
  if (wllama) parityRows.push([`wllama ${wllamaVersion} on our f32 file (vs sr-bench f32)`, wllama.parity.ours_f32_file]);
  if (wllama?.parity.llama_cpp_file) parityRows.push([`wllama ${wllamaVersion} on llama.cpp's converter's q8_0 file`, wllama.parity.llama_cpp_file]);
  for (const [name, p] of parityRows) {
    console.log(`${name.padEnd(62)} ${pair(p.vs_sentence_transformers).padStart(36)} ${pair(p.vs_sr_bench).padStart(24)}   worst vs sr-bench: "${p.vs_sr_bench.worst}"`);
  }
  if (tjs?.full_shuffled) {
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
    console.log(`MPNet parity on its 82 reference texts, vs sentence-transformers min / mean: sr-bench q8_0 (pool) ${pair(m.parity.vs_sentence_transformers)}`);
    if (tjsMpnet) {
      const t = tjsMpnet;
      const ratio = full ? m.full.sentences_per_s / t.full.sentences_per_s : m.sample.sentences_per_s / t.sample.sentences_per_s;
      console.log(`MPNet, transformers.js ${tjsVersion} fp32, ${t.threads} ORT threads: cold load ${fmt(t.load_ms / 1000, 2)} s, ` +
        `sample ${fmt(t.sample.sentences_per_s)} sentences/s` + (t.full ? `, full SR ${fmt(t.full.seconds, 0)} s (${fmt(t.full.sentences_per_s)}/s)` : '') +
        ` → ratio sr-bench / that ${fmt(ratio, 2)}× (${full ? 'full set' : 'sample'}); parity vs sentence-transformers ` +
        `${pair(t.parity.onnx.vs_sentence_transformers)}, vs sr-bench ${pair(t.parity.onnx.vs_sr_bench)}` +
        (t.report ? `; SR avg Spearman structure ${t.report.results.structure.avg_spearman}, relation ${t.report.results.relation.avg_spearman}` : ''));
    }
  }
  if (ours.modern) {
    // One file both engines read as written by llama.cpp's converter: speed and agreement only.
    const m = ours.modern;
    const wm = wllama?.modern;
    console.log('');
    console.log(`nomic-bert in MiniLM's shape, q8_0, random weights (llama.cpp's converter; rotary positions, SwiGLU), ` +
      `the same file in both engines; sample 2,000 SR sentences, full ${m.total}; sr-bench truncating at ${m.max_seq_length} tokens ` +
      `(no SR sentence is longer), wllama with a 512-token context:`);
    console.log(`${'system'.padEnd(62)} ${'cold load'.padStart(10)} ${'sample s/s'.padStart(11)} ${'full s/s'.padStart(9)} ${'full time'.padStart(10)} ${'ratio'.padStart(6)}`);
    const modernRows = [[`sr-bench q8_0, ${m.threads} Web Workers (wasm)`, m]];
    if (wm) modernRows.push([`wllama ${wllamaVersion} (llama.cpp ${wllama.version}) q8_0, ${wm.threads} threads`, wm]);
    for (const [name, r] of modernRows) {
      const ratio = full ? m.full.sentences_per_s / r.full.sentences_per_s : m.sample.sentences_per_s / r.sample.sentences_per_s;
      console.log(`${name.padEnd(62)} ${(fmt(r.load_ms / 1000, 2) + ' s').padStart(10)} ${fmt(r.sample.sentences_per_s).padStart(11)} ` +
        `${fmt(r.full?.sentences_per_s).padStart(9)} ${(r.full ? fmt(r.full.seconds, 0) + ' s' : '—').padStart(10)} ${(fmt(ratio, 2) + '×').padStart(6)}`);
    }
    console.log(`(ratio: sr-bench's sentences/s over the row's, ${full ? 'full set' : 'sample'}; the same length-sorted chunks)`);
    console.log(`nomic-bert parity on MiniLM's ${m.parity.texts} texts vs sr-bench (one wasm instance; no sentence-transformers run of random weights), min / mean:`);
    const modernParity = [['sr-bench q8_0 (pool)', m.parity]];
    if (wm) modernParity.push([`wllama ${wllamaVersion} (llama.cpp's q8_0 kernels, 8-bit activations)`, wm.parity]);
    for (const [name, p] of modernParity) {
      console.log(`${name.padEnd(62)} ${pair(p.vs_sr_bench).padStart(24)}   worst: "${p.vs_sr_bench.worst}"`);
    }
  }
  try {
    const cold = await coldStart();
    console.log(`cold start of the demo page (navigation → first embedding), model cached: ` +
      cold.slice(1).map((c) => `${fmt(c.ms, 0)} ms (${c.source})`).join(', ') + `; first visit (download on arrival) ${fmt(cold[0].ms, 0)} ms`);
  } catch (e) {
    console.log(`cold start: not measured (${e.message})`);
    process.exitCode = 1;
  }
  if (full) {
    for (const [name, r] of rows) {
      const res = r.report.results;
      console.log(`${name} SR avg Spearman: structure ${res.structure.avg_spearman}, relation ${res.relation.avg_spearman}`);
    }
  }
  console.log(`requests that left ${origins.join(' and ')}: ${external.length}${external.length ? ' ' + external.slice(0, 5).join(', ') : ''}`);
  if (external.length) process.exitCode = 1;
} finally {
  await browser.close();
}
