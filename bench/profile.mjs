// Where the browser's CPU time goes: runs bench.html (bench/web/; serve bench/out/site, made by
// bench/site.sh) for one model file under Chromium's
// sampling profiler (DevTools protocol) and prints self time per function, top first.
// Usage: node bench/profile.mjs URL [sentences] [model file] [rows]
import { chromium } from 'playwright-core';

const [url, sentences = '500', model = 'all-MiniLM-L6-v2.q8_0.gguf', rows = '30'] = process.argv.slice(2);
if (!url) {
  console.error('usage: node bench/profile.mjs http://127.0.0.1:PORT/ [sentences] [model file] [rows]');
  process.exit(2);
}
const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run'],
});
try {
  const page = await browser.newPage();
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Profiler.enable');
  await cdp.send('Profiler.setSamplingInterval', { interval: 200 });
  await cdp.send('Profiler.start');
  await page.goto(new URL(`bench.html?sentences=${sentences}&models=${model}`, url).href);
  await page.locator('#results[data-json], #results[data-error]').waitFor({ state: 'attached', timeout: 30 * 60 * 1000 });
  const { profile } = await cdp.send('Profiler.stop');
  const error = await page.locator('#results').getAttribute('data-error');
  if (error) throw new Error(error);

  // Self time per node = its sample count × the sampling interval; summed per function name.
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const counts = new Map();
  for (const id of profile.samples) counts.set(id, (counts.get(id) || 0) + 1);
  const selfByName = new Map();
  let total = 0;
  for (const [id, count] of counts) {
    const name = byId.get(id).callFrame.functionName || '(anonymous)';
    if (name === '(idle)' || name === '(program)') continue;
    selfByName.set(name, (selfByName.get(name) || 0) + count);
    total += count;
  }
  const { results } = JSON.parse(await page.locator('#results').getAttribute('data-json'));
  console.log(`${model}: ${results[0].sentences} sentences, ${results[0].sentences_per_s.toFixed(1)} sentences/s (profiled)`);
  console.log(`${'self %'.padStart(7)}  function`);
  for (const [name, count] of [...selfByName].sort((a, b) => b[1] - a[1]).slice(0, Number(rows))) {
    console.log(`${((100 * count) / total).toFixed(1).padStart(7)}  ${name.slice(0, 150)}`);
  }
} finally {
  await browser.close();
}
