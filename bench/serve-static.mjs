// A static server for the comparison pages of the peers, which start code from blob: URLs
// (wllama's worker, onnxruntime-web's wasm factory in transformers.js 4): the benchmark site with COOP/COEP (cross-origin isolated, so wasm threads work)
// and without the site's Content-Security-Policy, which `sr-bench serve` sends and which
// forbids blob: workers. Benchmarks only; 127.0.0.1 only.
// Usage: node bench/serve-static.mjs DIR PORT
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';

const [dir, port] = process.argv.slice(2);
const root = path.resolve(dir);
const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.mjs': 'text/javascript', '.wasm': 'application/wasm',
  '.json': 'application/json', '.css': 'text/css', '.svg': 'image/svg+xml', '.csv': 'text/csv' };

http.createServer((req, res) => {
  const file = path.join(root, decodeURIComponent(new URL(req.url, 'http://localhost').pathname));
  const inside = file === root || file.startsWith(root + path.sep);
  if (!inside || !fs.existsSync(file) || !fs.statSync(file).isFile()) {
    res.writeHead(404).end();
    return;
  }
  res.writeHead(200, {
    'Content-Type': TYPES[path.extname(file)] || 'application/octet-stream',
    'Content-Length': fs.statSync(file).size,
    'Cross-Origin-Opener-Policy': 'same-origin',
    'Cross-Origin-Embedder-Policy': 'require-corp',
    'Cross-Origin-Resource-Policy': 'same-origin',
  });
  fs.createReadStream(file).pipe(res);
}).listen(Number(port), '127.0.0.1');
