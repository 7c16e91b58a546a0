// Mixed-length texts in the page's pool: own-pairs runs of short SR sentences alone, of long
// paragraphs alone, and of both at once, timed from the Run click to the run's end (best of
// ROUNDS, alternating). A chunk handed to a helper is bounded by sentences and by padded tokens
// (engine/pool.js POOL_TOKENS); "at once / apart" near 1 means the mixed run costs what its
// parts cost. Prints one JSON line.
//
//   node bench/page-mixed.mjs SITE_URL [FILE]      (FILE: a model file picked as the user's own;
//                                                    default: the site's MiniLM q8_0)
//   ROUNDS=3 SHORT=100 LONG=8 node bench/page-mixed.mjs http://127.0.0.1:8731/
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { askToSaveData, launchChromium, watchErrors } from '../tests/e2e/common.mjs';

const [url, file] = process.argv.slice(2);
if (!url) {
  console.error('usage: node bench/page-mixed.mjs SITE_URL [FILE]');
  process.exit(2);
}
const ROUNDS = Number(process.env.ROUNDS || 3);
const SHORT = Number(process.env.SHORT || 100);
const LONG = Number(process.env.LONG || 8);

// The texts: SR sentences (stsb.csv's first column) in pairs, and paragraphs of ~1,800
// characters made of them, in pairs.
const root = path.join(path.dirname(new URL(import.meta.url).pathname), '..');
const sentences = [...new Set(fs.readFileSync(path.join(root, 'data/sr/stsb.csv'), 'utf8').split('\n').slice(1)
  .map((line) => line.split(',')[0]).filter((s) => s && !s.includes('"')))];
const short = Array.from({ length: SHORT }, (_, i) => [sentences[2 * i], sentences[2 * i + 1]]);
const paragraph = (from) => {
  let text = '';
  for (let i = from; text.length < 1800; i += 1) text += `${sentences[i % sentences.length]} `;
  return text.trim();
};
const long = Array.from({ length: LONG }, (_, i) => [paragraph(500 + 97 * i), paragraph(520 + 97 * i)]);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'page-mixed-'));
const csv = (name, pairs) => {
  const out = path.join(dir, name);
  fs.writeFileSync(out, `sentence1,sentence2,score\n${pairs.map(([a, b], i) => `${a},${b},${i % 6}`).join('\n')}\n`);
  return out;
};
const files = { short: csv('short.csv', short), long: csv('long.csv', long), mixed: csv('mixed.csv', [...short, ...long]) };

const browser = await launchChromium();
try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  if (file) await askToSaveData(context);
  const errors = [];
  watchErrors(context, errors);
  const page = await context.newPage();
  await page.goto(url);
  if (file) {
    await page.waitForSelector('#model-select:not([disabled])');
    await page.setInputFiles('#local-file', file);
    await page.waitForFunction(() => !document.getElementById('local-load').disabled, null, { timeout: 600_000 });
    await page.click('#local-load');
  }
  await page.waitForFunction(() => document.body.dataset.model === 'ready', null, { timeout: 600_000 });
  /** Each kind's last "Done: … in N s" line: the embedding phase as the page times it. */
  const messages = {};
  const run = async (name) => {
    await page.setInputFiles('#own-pairs-file', files[name]);
    const t0 = Date.now();
    await page.click('#run');
    await page.waitForFunction(() => document.body.dataset.run === 'idle' &&
      !/^Running /.test(document.getElementById('run-msg').textContent), null, { timeout: 1_800_000 });
    messages[name] = (await page.textContent('#run-msg')).trim();
    return (Date.now() - t0) / 1000;
  };
  await run('short'); // warm: the pool's helpers start and load the model
  const best = { short: Infinity, long: Infinity, mixed: Infinity };
  for (let r = 0; r < ROUNDS; r += 1) {
    for (const name of ['mixed', 'short', 'long']) best[name] = Math.min(best[name], await run(name));
  }
  const apart = best.short + best.long;
  console.log(JSON.stringify({
    model: file ? path.basename(file) : 'site default', short_pairs: SHORT, long_pairs: LONG,
    helpers: await page.evaluate(() => navigator.hardwareConcurrency), at_once_s: best.mixed,
    short_s: best.short, long_s: best.long, ratio_at_once_to_apart: Number((best.mixed / apart).toFixed(3)),
    messages, errors,
  }));
} finally {
  await browser.close();
  fs.rmSync(dir, { recursive: true, force: true });
}
