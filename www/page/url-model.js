// @ts-check
// "Or a GGUF file by URL": a model file from a host that allows CORS, fetched by the page with
// no referrer and no credentials, then handled as a file from this computer (local-model.js:
// its header inspected by Rust, the memory it needs checked, its sha256 shown, and checked
// against the one the user gives). The site's security policy names the origins it may fetch
// from (`sr-bench site --base-url`); any other is refused here, before a request is made.

import { $, formatBytes } from './ui.js';
import { pickFile, setLocalStatus } from './local-model.js';

/** @typedef {import('./state.js').PageState} PageState */

/** Largest file fetched: more than any encoder a browser tab can hold. */
const MAX_URL_BYTES = 2 * 1024 ** 3;

/** The origins the page's CSP lets it connect to ('self' as this page's origin). */
export function allowedOrigins() {
  const meta = document.querySelector('meta[http-equiv="Content-Security-Policy"]');
  const policy = meta ? meta.getAttribute('content') || '' : '';
  const directive = policy.split(';').map((d) => d.trim()).find((d) => d.startsWith('connect-src'));
  const sources = directive ? directive.split(/\s+/).slice(1) : ["'self'"];
  return sources.map((s) => (s === "'self'" ? location.origin : s.replace(/\/$/, '')));
}

/** @param {PageState} state */
async function fetchUrl(state) {
  const text = $('url-model').value.trim();
  const expected = $('url-sha256').value.trim().toLowerCase();
  let url;
  try {
    url = new URL(text);
  } catch {
    setLocalStatus('Type the full address of a .gguf file, starting with https://.', 'error', { code: 'bad-url' });
    return;
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    setLocalStatus('Only http(s) addresses can be fetched.', 'error', { code: 'bad-url' });
    return;
  }
  if (expected && !/^[0-9a-f]{64}$/.test(expected)) {
    setLocalStatus('A sha256 is 64 hexadecimal characters (or leave the field empty).', 'error', { code: 'bad-sha256' });
    return;
  }
  const allowed = allowedOrigins();
  if (!allowed.includes(url.origin)) {
    setLocalStatus(`This site may fetch models only from ${allowed.join(', ')} (its security policy, set when it was ` +
      `built); ${url.origin} is not one of them. Download the file and drop it here instead.`, 'error', { code: 'origin-not-allowed' });
    return;
  }
  const name = decodeURIComponent(url.pathname.split('/').pop() || 'model.gguf');
  const button = $('url-fetch');
  button.disabled = true;
  try {
    const res = await fetch(url.href, { referrerPolicy: 'no-referrer', credentials: 'omit', mode: 'cors', cache: 'no-store' });
    if (!res.ok) throw new Error(`HTTP ${res.status}`);
    const total = Number(res.headers.get('content-length')) || 0;
    if (total > MAX_URL_BYTES) throw new Error(`it is ${formatBytes(total)}, more than a tab can hold`);
    const chunks = [];
    let got = 0;
    const reader = res.body ? res.body.getReader() : null;
    if (!reader) chunks.push(new Uint8Array(await res.arrayBuffer()));
    while (reader) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      got += value.length;
      if (got > MAX_URL_BYTES) throw new Error('it is more than 2 GB, more than a tab can hold');
      setLocalStatus(`Downloading ${name}: ${formatBytes(got)}${total ? ` of ${formatBytes(total)}` : ''}…`, 'info');
    }
    const file = new File(chunks, name, { type: 'application/octet-stream' });
    await pickFile(state, file);
    const picked = state.localFile;
    if (expected && picked && picked.file === file && picked.sha256 && picked.sha256 !== expected) {
      setLocalStatus(`${name}'s sha256 is ${picked.sha256}, not the ${expected} you gave: it is not the file you meant, and it will not be loaded.`,
        'error', { code: 'hash-mismatch' });
      $('local-load').disabled = true;
    }
  } catch (err) {
    setLocalStatus(`${url.href} could not be fetched: ${err.message}. The host must allow this site (CORS).`, 'error', { code: 'network' });
  } finally {
    button.disabled = false;
  }
}

/** @param {PageState} state */
export function setupUrlModel(state) {
  $('url-origins').textContent = `From a host that allows this site to read it (CORS). This site may fetch from: ${allowedOrigins().join(', ')}.`;
  $('url-fetch').addEventListener('click', () => fetchUrl(state));
  $('url-model').addEventListener('keydown', (e) => { if (e.key === 'Enter') fetchUrl(state); });
}
