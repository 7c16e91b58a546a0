// End-to-end test of the public site (`sr-bench site OUT`) as a static host serves it: the
// app from one server that sends no custom headers and refuses any file over 25 MiB (as GitHub
// Pages or Cloudflare Pages would), the models in parts from a second origin with CORS (as the
// Hugging Face hub). MiniLM q8_0 and MPNet q8_0 load from their parts and score a pair as the
// CLI does; the quick split runs (one file); a model server that stops after MPNet's 3rd part
// gives a message naming the part, and loading again fetches only the missing parts (requests
// counted); a part with one byte flipped is refused, naming it, and nothing of it is cached;
// once loaded, the site works offline with the model in parts.
//
//   SR_BENCH_CLI=path/to/sr-bench  node --test tests/e2e/site.test.mjs
//   (builds OUT itself from www/dist: run ./build.sh build first)

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import {
  ACTIVE, ARTIFACTS, askToSaveData, cliJson, cliPath, dataValue, launchChromium, openModelPanel, PASSIVE, ROOT,
  scorePair, waitFirstLoadDecided, watchErrors,
} from './common.mjs';
import { HOST_LIMIT, publicSite } from './static-host.mjs';

const CLI = cliPath();

describe('the public site, from a static host and a model host', () => {
  let site;
  let browser;
  let out;
  let app;
  let models;
  /** The model server's failure mode: null, {stopAfter: n} for MPNet's parts, or {flip: file}. */
  const mode = { current: null };
  let mpnetServed = 0;
  const errors = [];

  before(async () => {
    site = await publicSite({
      cli: CLI,
      root: ROOT,
      artifacts: ARTIFACTS,
      models: ['all-MiniLM-L6-v2.q8_0', 'all-mpnet-base-v2.q8_0'],
      hook: (pathname, req, res) => {
        const name = path.basename(pathname);
        if (mode.current && mode.current.stopAfter !== undefined && name.startsWith('all-mpnet-base-v2.q8_0.gguf.part')) {
          mpnetServed += 1;
          if (mpnetServed > mode.current.stopAfter) {
            req.socket.destroy(); // the host went away
            return true;
          }
        }
        if (mode.current && mode.current.flip === name) {
          const bytes = fs.readFileSync(path.join(out, 'models', name));
          bytes[1000] ^= 0x01;
          res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': bytes.length, 'access-control-allow-origin': '*' });
          res.end(bytes);
          return true;
        }
        return false;
      },
    });
    ({ out, app, models } = site);
    console.log(site.printed.trim());
    browser = await launchChromium();
  });

  after(async () => {
    if (browser) await browser.close();
    if (site) site.close();
  });

  test('OUT: every file under 25 MiB, the models in parts listed with their sha256', () => {
    const manifest = JSON.parse(fs.readFileSync(path.join(out, 'models/manifest.json'), 'utf8'));
    assert.equal(manifest.base_url, `http://127.0.0.1:${models.port}/`);
    for (const m of manifest.models) {
      assert.ok(m.parts.length >= 2, m.file);
      assert.equal(m.parts.reduce((n, p) => n + p.bytes, 0), m.bytes);
      for (const p of m.parts) {
        assert.ok(p.bytes <= 16 * 1024 * 1024 && /^[0-9a-f]{64}$/.test(p.sha256), p.file);
        assert.equal(fs.statSync(path.join(out, 'models', p.file)).size, p.bytes);
      }
    }
    const walk = (d) => fs.readdirSync(d, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(path.join(d, e.name)) : [path.join(d, e.name)]));
    for (const f of walk(out)) assert.ok(fs.statSync(f).size <= HOST_LIMIT, f);
    const html = fs.readFileSync(path.join(out, 'index.html'), 'utf8');
    assert.match(html, new RegExp(`connect-src 'self' http://127\\.0\\.0\\.1:${models.port};`));
    assert.match(fs.readFileSync(path.join(out, '_headers'), 'utf8'), /frame-ancestors 'none'/);
  });

  test('MiniLM q8_0 from its parts on the other origin: the pair and a quick-split file are the CLI\'s; then offline', { timeout: 400_000 }, async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, serviceWorkers: 'allow' });
    watchErrors(context, errors);
    const page = await context.newPage();
    await page.goto(`http://127.0.0.1:${app.port}/`);
    await waitFirstLoadDecided(page);
    assert.ok(await page.evaluate(() => document.body.dataset.model), 'the default model loads on arrival, without a click');
    await page.waitForFunction(() => document.body.dataset.model === 'ready', null, { timeout: 180_000 });
    const parts = models.requests.filter((r) => r.includes('all-MiniLM-L6-v2.q8_0.gguf.part'));
    assert.deepEqual([...new Set(parts)].sort(), ['/all-MiniLM-L6-v2.q8_0.gguf.part001', '/all-MiniLM-L6-v2.q8_0.gguf.part002']);
    assert.equal(app.requests.filter((r) => r.includes('.gguf')).length, 0, 'no model file from the app host');
    // Downloaded: the page asked to keep it, and says what the browser answered.
    await page.waitForFunction(() => document.getElementById('model-status').dataset.persisted !== undefined, null, { timeout: 10_000 });
    assert.match(await page.textContent('#model-status'), /persistent storage/);
    const cosine = await scorePair(page, ACTIVE, PASSIVE);
    const cli = Number(execFileSync(CLI, ['similarity', '--model', path.join(ROOT, 'www/models/all-MiniLM-L6-v2.q8_0.gguf'), ACTIVE, PASSIVE],
      { encoding: 'utf8' }).trim());
    assert.ok(Math.abs(cosine - cli) <= 1e-4, `page ${cosine}, CLI ${cli}`);
    for (const f of ['stsb', 'sickr', 'askubuntu', 'cqa', 'twitter', 'biosses']) await page.setChecked(`input[name="sr-file"][value="${f}"]`, f === 'biosses');
    await page.setChecked('#bench-stsb-test', false);
    await page.click('#run');
    await page.waitForFunction(() => document.body.dataset.run === 'idle' && !/^Running /.test(document.getElementById('run-msg').textContent), null, { timeout: 300_000 });
    assert.equal(await page.getAttribute('#run-msg', 'data-level'), 'info', await page.textContent('#run-msg'));
    const want = cliJson(['eval', '--model', path.join(ROOT, 'www/models/all-MiniLM-L6-v2.q8_0.gguf'), '--split', 'quick', '--files', 'biosses', '--no-stsb-test']);
    for (const dim of ['structure', 'relation']) {
      const got = await dataValue(page, `[data-cell="${dim}-biosses"]`);
      assert.ok(Math.abs(got - want.results[dim].biosses.spearman) <= 0.01, `${dim}: page ${got}, CLI ${want.results[dim].biosses.spearman}`);
    }
    // Offline: the app from the service worker, the model from its cached parts.
    await page.waitForFunction(() => document.getElementById('offline-status').dataset.ready === 'yes', null, { timeout: 120_000 });
    await context.setOffline(true);
    const again = await context.newPage();
    await again.goto(`http://127.0.0.1:${app.port}/`);
    await again.waitForFunction(() => document.body.dataset.model === 'ready', null, { timeout: 120_000 });
    assert.ok(Math.abs((await scorePair(again, ACTIVE, PASSIVE)) - cli) <= 1e-4, 'offline, the same cosine');
    await context.close();
    assert.deepEqual(errors.filter((e) => !/ERR_INTERNET_DISCONNECTED|Failed to fetch/.test(e)), []);
  });

  test('MPNet q8_0: the host stops after the 3rd part, the page says so; loading again fetches only the missing parts', { timeout: 400_000 }, async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await askToSaveData(context); // MPNet is picked before anything loads
    const page = await context.newPage();
    await page.goto(`http://127.0.0.1:${app.port}/`);
    await page.waitForFunction(() => document.getElementById('model-select').options.length > 0);
    mode.current = { stopAfter: 3 };
    mpnetServed = 0;
    await openModelPanel(page);
    await page.selectOption('#model-select', 'all-mpnet-base-v2@q8_0');
    await page.click('#model-load');
    await page.waitForFunction(() => /Could not load all-mpnet-base-v2/.test(document.getElementById('model-status').textContent), null, { timeout: 180_000 });
    const message = await page.textContent('#model-status');
    assert.match(message, /part \d of 8 \(all-mpnet-base-v2\.q8_0\.gguf\.part00\d\) failed/);
    const stored = Number(message.match(/(\d) of 8 parts are stored in this browser/)[1]);
    assert.ok(stored >= 3 && stored < 8, message);
    const before = models.requests.length;
    mode.current = null; // the host is back
    await openModelPanel(page);
    await page.click('#model-load');
    await page.waitForFunction(() => document.body.dataset.model === 'ready' &&
      document.getElementById('model-active').textContent.includes('all-mpnet-base-v2'), null, { timeout: 240_000 });
    const retried = models.requests.slice(before).filter((r) => r.includes('all-mpnet-base-v2.q8_0.gguf.part'));
    assert.equal(retried.length, 8 - stored, `only the missing parts: ${retried.join(', ')}`);
    const cosine = await scorePair(page, ACTIVE, PASSIVE);
    const cli = Number(execFileSync(CLI, ['similarity', '--model', path.join(ROOT, 'www/models/all-mpnet-base-v2.q8_0.gguf'), ACTIVE, PASSIVE],
      { encoding: 'utf8' }).trim());
    assert.ok(Math.abs(cosine - cli) <= 1e-4, `page ${cosine}, CLI ${cli}`);
    await context.close();
  });

  test('a GGUF by URL from the model origin: sha256 shown and checked, then it loads; another origin is refused', { timeout: 240_000 }, async () => {
    const file = 'all-MiniLM-L6-v2.q4_0.gguf'; // 19.8 MB: under the host's limit whole
    fs.copyFileSync(path.join(ROOT, 'www/models', file), path.join(out, 'models', file));
    const sha = execFileSync('sha256sum', [path.join(ROOT, 'www/models', file)], { encoding: 'utf8' }).split(' ')[0];
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await askToSaveData(context); // only the file by URL is loaded
    const page = await context.newPage();
    await page.goto(`http://127.0.0.1:${app.port}/`);
    await page.waitForFunction(() => document.getElementById('model-select').options.length > 0);
    assert.match(await page.textContent('#url-origins'), new RegExp(`http://127\\.0\\.0\\.1:${models.port}`));
    const status = () => page.textContent('#local-status');
    // Another origin: refused before any request.
    await openModelPanel(page);
    await page.fill('#url-model', 'https://example.org/model.gguf');
    await page.click('#url-fetch');
    assert.match(await status(), /may fetch models only from .*https:\/\/example\.org is not one of them/);
    // The wrong sha256: fetched, its sha256 shown, refused.
    await openModelPanel(page);
    await page.fill('#url-model', `http://127.0.0.1:${models.port}/${file}`);
    await page.fill('#url-sha256', '0'.repeat(64));
    await page.click('#url-fetch');
    await page.waitForFunction(() => document.getElementById('local-status').dataset.code === 'hash-mismatch', null, { timeout: 120_000 });
    assert.match(await status(), new RegExp(`sha256 is ${sha}, not the 0{64} you gave`));
    assert.equal(await page.isDisabled('#local-load'), true);
    // The right one: loads, and scores as the CLI.
    await openModelPanel(page);
    await page.fill('#url-sha256', sha);
    await page.click('#url-fetch');
    await page.waitForFunction(() => !document.getElementById('local-load').disabled, null, { timeout: 120_000 });
    assert.match(await page.textContent('#local-info'), new RegExp(sha.slice(0, 12)));
    await openModelPanel(page);
    await page.click('#local-load');
    await page.waitForFunction(() => document.body.dataset.model === 'ready', null, { timeout: 120_000 });
    const cosine = await scorePair(page, ACTIVE, PASSIVE);
    const cli = Number(execFileSync(CLI, ['similarity', '--model', path.join(ROOT, 'www/models', file), ACTIVE, PASSIVE], { encoding: 'utf8' }).trim());
    assert.ok(Math.abs(cosine - cli) <= 1e-4, `page ${cosine}, CLI ${cli}`);
    const requests = models.requests.filter((r) => r.endsWith(file));
    assert.equal(requests.length, 2, 'fetched once per press, the refused origin never');
    await context.close();
  });

  test('a part with one byte flipped is refused, naming it, and is not cached', { timeout: 240_000 }, async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    mode.current = { flip: 'all-MiniLM-L6-v2.q8_0.gguf.part002' };
    await page.goto(`http://127.0.0.1:${app.port}/`);
    await waitFirstLoadDecided(page);
    assert.ok(await page.evaluate(() => document.body.dataset.model), 'the default model loads on arrival, without a click');
    await page.waitForFunction(() => /Could not load/.test(document.getElementById('model-status').textContent), null, { timeout: 180_000 });
    const message = await page.textContent('#model-status');
    assert.match(message, /part 2 of 2 \(all-MiniLM-L6-v2\.q8_0\.gguf\.part002\) is damaged/);
    const cached = await page.evaluate(async () => (await (await caches.open('sr-bench-models-v1')).keys()).map((r) => r.url));
    assert.ok(cached.some((u) => u.includes('part001')), 'the good part is kept');
    assert.ok(!cached.some((u) => u.includes('part002')), `the damaged part is not: ${cached}`);
    mode.current = null;
    await context.close();
  });
});
