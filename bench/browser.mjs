// Runs www/bench.html in headless Chromium against a served site and prints its figures.
// Usage: node bench/browser.mjs URL [sentences]
import { chromium } from 'playwright-core';

const [url, sentences = "2000", models = ""] = process.argv.slice(2);
if (!url) {
  console.error('usage: node bench/browser.mjs http://127.0.0.1:PORT/ [sentences]');
  process.exit(2);
}
const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-background-networking',
    '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic'],
});
try {
  const page = await browser.newPage();
  page.on('console', (m) => { if (m.type() === 'error') console.error('console:', m.text()); });
  await page.goto(new URL(`bench.html?sentences=${sentences}&models=${models}`, url).href);
  const results = page.locator('#results[data-json], #results[data-error]');
  await results.waitFor({ state: 'attached', timeout: 30 * 60 * 1000 });
  const error = await page.locator('#results').getAttribute('data-error');
  if (error) throw new Error(error);
  const { userAgent, results: rows } = JSON.parse(await page.locator('#results').getAttribute('data-json'));
  console.log(`browser CPU benchmark (wasm simd128, 1 thread): ${rows[0]?.sentences} SR sentences — ${userAgent}`);
  console.log(`${'model file'.padEnd(36)} ${'load (ms)'.padStart(12)} ${'sentences/s'.padStart(14)}`);
  for (const r of rows) {
    console.log(`${r.file.padEnd(36)} ${r.load_ms.toFixed(1).padStart(12)} ${r.sentences_per_s.toFixed(1).padStart(14)}`);
  }
} finally {
  await browser.close();
}
