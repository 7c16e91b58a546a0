// The quick split in the page, on the CPU, with a model file picked with the file input (as a
// user drops their own), timed from the Run click to "Done": the page's own figure for models
// without a row in the benchmark site (the full-size random Qwen3 of bench/full_shape.py).
//
//   node bench/page-quick-split.mjs SITE_URL FILE [MAX_SEQ]
//
// SITE_URL: www/dist served (`sr-bench serve --dir www/dist`); MAX_SEQ: the page's "Max sequence
// length" field (a 32,768-token context does not fit the page's memory; 512 does).
import {
  askToSaveData, chooseData, launchChromium, watchErrors,
} from '../tests/e2e/common.mjs';

const [url, file, maxSeq] = process.argv.slice(2);
if (!url || !file) {
  console.error('usage: node bench/page-quick-split.mjs SITE_URL FILE [MAX_SEQ]');
  process.exit(2);
}
const HOUR = 60 * 60_000;

/** Waits for `condition` in the page, printing the model's and the run's status every minute
 * (a run of tens of minutes shows it is alive); fails on a page error. */
async function waitWithProgress(page, condition, timeout) {
  const start = Date.now();
  for (;;) {
    try {
      await page.waitForFunction(condition, null, { timeout: 60_000, polling: 1000 });
      return;
    } catch (e) {
      if (!/Timeout/.test(String(e)) || Date.now() - start > timeout) throw e;
    }
    const status = await page.evaluate(() => [document.getElementById('model-status').textContent,
      document.getElementById('run-msg').textContent, document.getElementById('local-status')?.textContent]);
    console.error(`${Math.round((Date.now() - start) / 1000)} s:`, status.map((t) => (t || '').trim()).join(' | '));
  }
}
const browser = await launchChromium();
try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  await askToSaveData(context); // only the picked file loads
  const errors = [];
  watchErrors(context, errors);
  const page = await context.newPage();
  await page.goto(url);
  await page.waitForSelector('#model-select:not([disabled])');
  await page.setInputFiles('#local-file', file);
  if (maxSeq) await page.fill('#local-max-seq', maxSeq);
  await page.waitForFunction(() => !document.getElementById('local-load').disabled, null, { timeout: 10 * 60_000 });
  const memory = await page.getAttribute('#local-info-body tr[data-field="worker_bytes"]', 'data-value');
  const t0 = Date.now();
  await page.click('#local-load');
  await waitWithProgress(page, () => document.body.dataset.model === 'ready' &&
    document.getElementById('model-active').textContent.includes('local file'), HOUR);
  const loadMs = Date.now() - t0;
  await page.check('input[name="split"][value="quick"]');
  await chooseData(page, { stsbTest: false });
  await page.selectOption('#encoder', 'model');
  const t1 = Date.now();
  await page.click('#run');
  await waitWithProgress(page, () => document.body.dataset.run === 'idle' &&
    /^Done/.test(document.getElementById('run-msg').textContent), 2 * HOUR);
  const runMs = Date.now() - t1;
  console.log(JSON.stringify({
    file, max_seq_length: maxSeq ? Number(maxSeq) : null, worker_bytes: Number(memory), load_ms: loadMs,
    quick_split_ms: runMs, message: (await page.textContent('#run-msg')).trim(),
    status: (await page.textContent('#model-status')).trim(), errors,
  }, null, 1));
} finally {
  await browser.close();
}
