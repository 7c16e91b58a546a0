// @ts-check
// Small UI helpers shared by the panels: element lookup and creation, status messages,
// number formatting, file downloads. User text only ever goes through textContent.

/**
 * The page's element with this id: typed by page/elements.d.ts (a form control, a canvas …),
 * else an HTMLElement.
 * @template {string} K
 * @param {K} id
 * @returns {K extends keyof PageElements ? PageElements[K] : HTMLElement}
 */
export const $ = (id) => /** @type {any} */ (document.getElementById(id));

export const nf0 = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });

export function formatBytes(n) {
  if (!Number.isFinite(n) || n <= 0) return '? MB';
  if (n < 1e6) return `${(n / 1e3).toFixed(0)} kB`;
  return `${(n / 1e6).toFixed(n < 1e8 ? 1 : 0)} MB`;
}

export function formatDuration(ms) {
  if (!Number.isFinite(ms) || ms < 0) return '…';
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  return `${m} min ${String(s % 60).padStart(2, '0')} s`;
}

export const fmt2 = (x) => (Number.isFinite(x) ? x.toFixed(2) : '—');
export const fmtSigned = (x) => (Number.isFinite(x) ? `${x >= 0 ? '+' : '−'}${Math.abs(x).toFixed(2)}` : '');

/** A status line: text plus a level ("info" | "warning" | "error") for styling and tests. */
export function setMessage(node, text, level = 'info') {
  node.textContent = text || '';
  node.dataset.level = level;
  node.classList.toggle('is-error', level === 'error');
  node.classList.toggle('is-warning', level === 'warning');
}

/** `el('td', {class, data: {…}, attr: value}, child…)`; children are nodes or text. */
export function el(tag, props = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (k === 'class') e.className = v;
    else if (k === 'data') Object.assign(e.dataset, v);
    else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

/** Saves `text` as a file named `name`. */
export function download(name, type, text) {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
