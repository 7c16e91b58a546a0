// A plain static host for the site tests, as GitHub Pages or Cloudflare Pages would be: no
// custom headers, any file over 25 MiB refused; optionally CORS (the model host) and a hook
// that may answer a request first (a host that goes away, a damaged part).

import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';

export const HOST_LIMIT = 25 * 1024 * 1024;
const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.json': 'application/json',
  '.wasm': 'application/wasm', '.csv': 'text/csv', '.tsv': 'text/tab-separated-values', '.svg': 'image/svg+xml' };

/** A plain static server of `dir` on a free port: no custom headers, 403 past 25 MiB; `hooks`
 * may answer a request first (return true). Resolves to {server, port, requests}. */
export function staticServer(dir, { cors = false, hook = null } = {}) {
  const requests = [];
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://x');
    requests.push(url.pathname);
    if (hook && hook(url.pathname, req, res)) return;
    const file = path.join(dir, decodeURIComponent(url.pathname.replace(/\/$/, '/index.html')));
    if (!file.startsWith(dir) || !fs.existsSync(file) || !fs.statSync(file).isFile()) {
      res.writeHead(404).end('not found');
      return;
    }
    const size = fs.statSync(file).size;
    if (size > HOST_LIMIT) {
      res.writeHead(403).end('file over 25 MiB');
      return;
    }
    const headers = { 'content-type': TYPES[path.extname(file)] || 'application/octet-stream', 'content-length': size };
    if (cors) headers['access-control-allow-origin'] = '*';
    res.writeHead(200, headers);
    fs.createReadStream(file).pipe(res);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, port: server.address().port, requests })));
}

/**
 * `sr-bench site` (the CLI `cli`, run from `root`) with `models` into a fresh folder under
 * `artifacts`, the parts served from a second origin with CORS (`hook` as for staticServer;
 * its port goes into the manifest and the CSP) and the app from a plain host. Resolves to
 * {out, app, models, printed, close}.
 */
export async function publicSite({ cli, root, artifacts, models, hook = null }) {
  fs.mkdirSync(artifacts, { recursive: true });
  const out = fs.mkdtempSync(path.join(artifacts, 'site-'));
  fs.rmSync(out, { recursive: true });
  const modelHost = await staticServer(path.join(out, 'models'), { cors: true, hook });
  const printed = execFileSync(cli, ['site', out, '--from', path.join(root, 'www/dist'), '--models', models.join(','),
    '--base-url', `http://127.0.0.1:${modelHost.port}/`], { cwd: root, encoding: 'utf8' });
  const app = await staticServer(out);
  const close = () => {
    for (const s of [app, modelHost]) s.server.close();
    fs.rmSync(out, { recursive: true, force: true });
  };
  return { out, app, models: modelHost, printed, close };
}

