// @ts-check
// A token-pair map (Rust's Explanation, see protocol.js TokenPairMap) drawn as a heat map table:
// rows A's tokens, columns B's, a diverging colour scale centred at 0, row / column totals beside
// it and the grand total in the corner. Every number cell keeps its exact value in data-value.
// Reusable: renderHeatMap(container, map, options) replaces the container's content.

import { el } from './ui.js';

/** Beyond this many cells the table would freeze the page: the map is left to the CLI. */
const MAX_CELLS = 80 * 80;
const POSITIVE = [11, 78, 162]; // --accent
const NEGATIVE = [164, 22, 26]; // --diff

/** Three decimals with a true minus sign, none on a rounded zero (the exact value is in data-value
 * and the tooltip). */
function short(v) {
  const digits = Math.abs(v).toFixed(3);
  return v < 0 && digits !== '0.000' ? `−${digits}` : digits;
}

/** A number cell: text, exact value, colour on the diverging scale (|v| / scale → opacity). */
function numberCell(tag, value, scale, props = {}) {
  const cell = el(tag, { ...props, data: { ...(props.data || {}), value: String(value) } }, short(value));
  if (scale > 0) {
    const t = Math.min(1, Math.abs(value) / scale);
    const [r, g, b] = value >= 0 ? POSITIVE : NEGATIVE;
    cell.style.backgroundColor = `rgba(${r}, ${g}, ${b}, ${t.toFixed(3)})`;
    // The text colour with the higher contrast on the cell as drawn (over white): black or
    // white, whichever wins, is always ≥ 4.58:1 (WCAG AA asks 4.5), whatever the shade.
    const shown = [r, g, b].map((c) => 255 - t * (255 - c));
    const l = luminance(shown);
    cell.style.color = 1.05 / (l + 0.05) > (l + 0.05) / 0.05 ? '#ffffff' : '#000000';
  }
  return cell;
}

/** Cells named in a map's text alternative. */
const TOP_CELLS = 5;

/** The map as a screen reader hears it: its largest cells (by size) as a list. */
function topList(shown) {
  const cells = shown.contributions.flatMap((row, i) => row.map((v, j) => ({ v, i, j })))
    .sort((x, y) => Math.abs(y.v) - Math.abs(x.v)).slice(0, TOP_CELLS);
  const what = shown.kind === 'contributions' ? 'contributions' : 'token cosines';
  return el('div', { class: 'visually-hidden heatmap-top' },
    el('p', {}, `The ${cells.length} largest ${what}:`),
    el('ol', {}, ...cells.map((c) => el('li', {}, `${shown.tokens_a[c.i]} × ${shown.tokens_b[c.j]}: ${short(c.v)}`))));
}

/** WCAG's relative luminance of an sRGB colour (0–255 channels). */
function luminance(rgb) {
  const [r, g, b] = rgb.map((c) => {
    const s = c / 255;
    return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
  });
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}

/** What the map is, in one line (a token-to-token cosine matrix is not a decomposition). */
function describe(map) {
  if (map.kind === 'token_cosine') {
    return `Token-to-token cosine matrix (${map.pooling} pooling): the cosine of each token of A with each token of B. ` +
      'Not a decomposition — this model does not average its tokens, so the cells do not add up to the score.';
  }
  return 'Each cell is one token pair’s share of the cosine: all cells add up to the score ' +
    '(blue raises it, red lowers it).';
}

/**
 * @param {HTMLElement} container
 * @param {import('../shared/protocol.js').TokenPairMap} map
 * @param {{title: string, words?: boolean}} options  words: show `map.words` (pieces summed into words)
 */
export function renderHeatMap(container, map, options) {
  const shown = options.words && map.words ? map.words : map;
  const isSum = shown.kind === 'contributions';
  const rows = shown.tokens_a.length;
  const cols = shown.tokens_b.length;
  const figure = el('figure', {
    class: 'heatmap',
    data: { kind: shown.kind, encoder: shown.encoder, grouped: String(shown !== map), rows: String(rows), cols: String(cols) },
  });
  figure.append(el('figcaption', {}, el('strong', {}, options.title), ' ', el('span', { class: 'muted' }, describe(shown))));
  container.replaceChildren(figure);
  if (rows * cols > MAX_CELLS) {
    figure.append(el('p', { class: 'status is-warning' },
      `${rows} × ${cols} tokens is too large to draw here: use \`sr-bench explain --json\` for this pair.`));
    return;
  }
  const cells = shown.contributions.flat();
  const scale = Math.max(...cells.map(Math.abs), 0);

  const head = el('tr', {}, el('th', { scope: 'col', class: 'corner' }, 'A ╲ B'),
    // Column labels run upwards (span.up) so that ~20 columns fit across.
    ...shown.tokens_b.map((t, j) => el('th', { scope: 'col', class: 'col-token', data: { j: String(j) } }, el('span', { class: 'up' }, t))));
  if (isSum) head.append(el('th', { scope: 'col', class: 'total-head' }, 'row total'));
  const body = shown.contributions.map((row, i) => {
    const tr = el('tr', {}, el('th', { scope: 'row', class: 'row-token', data: { i: String(i) } }, shown.tokens_a[i]));
    row.forEach((v, j) => tr.append(numberCell('td', v, scale, {
      class: 'cell', title: `${shown.tokens_a[i]} × ${shown.tokens_b[j]}: ${v}`, data: { i: String(i), j: String(j) },
    })));
    if (isSum) tr.append(numberCell('td', shown.row_totals[i], 0, { class: 'row-total', data: { i: String(i) } }));
    return tr;
  });
  const table = el('table', { class: 'heatmap-table' }, el('thead', {}, head), el('tbody', {}, ...body));
  if (isSum) {
    table.append(el('tfoot', {}, el('tr', {}, el('th', { scope: 'row' }, 'column total'),
      ...shown.column_totals.map((v, j) => numberCell('td', v, 0, { class: 'column-total', data: { j: String(j) } })),
      numberCell('td', shown.total, 0, { class: 'grand-total', title: `all cells: ${shown.total}` }))));
  }
  const hover = el('p', { class: 'heatmap-hover muted', 'aria-live': 'polite' }, 'Point at a cell to see its tokens and exact value.');
  table.addEventListener('mouseover', (e) => {
    const cell = e.target.closest('td.cell');
    if (cell) hover.textContent = cell.title;
  });
  // The map scrolls on a narrow screen: focusable, so the arrow keys scroll it too.
  const scroll = el('div', { class: 'heatmap-scroll', tabindex: '0', role: 'region', 'aria-label': `${options.title}: the map (scrolls)` }, table);
  figure.append(scroll, hover, topList(shown));
  figure.append(isSum
    ? el('p', { class: 'heatmap-sum' }, 'All cells add up to ', el('strong', {}, shown.total.toFixed(4)),
      ` = the cosine ${map.cosine.toFixed(4)}.`)
    : el('p', { class: 'heatmap-sum' }, `The model’s cosine (${map.pooling} pooling) is `, el('strong', {}, map.cosine.toFixed(4)),
      ': it is not the sum of these cells.'));
}
