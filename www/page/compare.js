// @ts-check
// Step 5, compare runs: every finished run in this tab is kept (state.runs); a table ranks them,
// sortable by any column, a bar chart shows the three scores side by side, and the table
// downloads as CSV.
//
// Ranked by default by the relation average: the SR benchmark asks whether a model reads
// syntax, and the relation dimension (who did what to whom) is where a bag of words cannot
// help: the syntax-blind baseline scores a swapped-role pair as identical. STS-B, ordinary
// similarity, is shown for contrast, not used to rank.

import { SR_FILES, DIMENSIONS } from '../shared/protocol.js';
import { createBars } from './charts.js';
import { $, el, download, fmt2, setMessage } from './ui.js';
import { modelSource } from './export.js';
import { coversEveryFile } from './results.js';
import { renderMeasured } from './measured.js';

/** @typedef {import('./state.js').PageState} PageState */

/** The table's columns: key, heading, kind ("text" sorts A→Z first, "num" high first). */
/** The table's columns: [key, heading, kind ("num" | "text")]. @type {Array<[string, string, string]>} */
export const COMPARE_COLUMNS = [
  ['rank', '#', 'num'],
  ['model', 'model', 'text'],
  ['dtype', 'dtype', 'text'],
  ['backend', 'backend', 'text'],
  ['split', 'split', 'text'],
  ['encoder', 'encoder', 'text'],
  ['prefix', 'text prefix', 'text'],
  ['source', 'source', 'text'],
  ['finished', 'finished', 'text'],
  ['structure_avg', 'structure avg', 'num'],
  ['relation_avg', 'relation avg', 'num'],
  ['stsb_test_spearman', 'STS-B test', 'num'],
  ['pairwise_all', 'right rewrite picked %', 'num'],
  ['data', 'data', 'text'],
  ['czech_news_sts_pearson', 'Czech News STS Pearson', 'num'],
  ['own_pairs_spearman', 'own pairs Spearman', 'num'],
  ['sentences_per_s', 'sentences/s', 'num'],
  ['gflop_per_s_per_core', 'GFLOP/s per core', 'num'],
];

const SCORES = [
  ['structure_avg', 'structure avg', 'rgba(11, 78, 162, 0.75)'],
  ['relation_avg', 'relation avg', 'rgba(196, 90, 20, 0.75)'],
  ['stsb_test_spearman', 'STS-B test', 'rgba(90, 90, 90, 0.55)'],
];

const finite = (x) => (Number.isFinite(x) ? x : null);

/** One finished run as a row of the table (the values are the report's, unrounded). */
export function runRow(id, result) {
  const { report, timings, load } = result;
  const src = modelSource(load);
  const status = result.backend_status || load.backend_status;
  // The avg of some files only is not Table 4's: left empty, as `sr-bench compare` does.
  const every = coversEveryFile(report);
  /** Spearman per SR file and the average, per dimension (the CSV's Table 4 columns). */
  const cells = Object.fromEntries(DIMENSIONS.flatMap((dim) => [...SR_FILES, 'avg'].map((f) => [`${dim}_${f}`,
    finite(f === 'avg' ? (every ? report.results?.[dim]?.avg_spearman : null) : report.results?.[dim]?.[f]?.spearman)])));
  // Pairwise accuracy per SR file and over all (the CSV's pairwise columns; a coin scores 50).
  for (const f of [...SR_FILES, 'all']) {
    cells[`pairwise_${f}`] = finite(f === 'all' ? report.pairwise?.all?.accuracy : report.pairwise?.files?.[f]?.accuracy);
  }
  return {
    id,
    model: report.model,
    dtype: report.dtype,
    backend: report.encoder === 'static' ? 'cpu' : status && status.active === 'webgpu' ? 'webgpu' : 'cpu',
    split: report.split,
    encoder: report.encoder === 'static' ? 'static' : 'model',
    // The instruction the run read (runs of one model that differ only in it are told apart).
    prefix: report.prefix || '',
    source: src.kind === 'local file' ? `local file ${src.file_name}` : 'site',
    sha256: src.sha256,
    finished: result.finished_at,
    structure_avg: cells.structure_avg,
    relation_avg: cells.relation_avg,
    stsb_test_spearman: finite(report.stsb_test?.spearman),
    // STS-B test as retrieval, nDCG@10 ×100 (the Results view's column).
    retrieval_ndcg10: finite(report.retrieval?.stsb_test?.ndcg_at_10 * 100),
    pairwise_all: cells.pairwise_all,
    data: dataOf(report),
    czech_news_sts_pearson: finite(report.czech_news_sts?.model?.pearson),
    // An STS-layout file's one Spearman; an SR-layout file's relation (the table's ranking).
    own_pairs_spearman: finite(report.own_pairs ? (report.own_pairs.similarity || report.own_pairs.relation)?.spearman : null),
    sentences_per_s: finite(timings.sentences_per_s),
    gflop_per_s: finite(timings.gflop_per_s),
    gflop_per_s_per_core: finite(timings.gflop_per_s_per_core),
    cells,
  };
}

/** @param {PageState} state */
export function recordRun(state, result) {
  state.runs.push(runRow(state.runs.length + 1, result));
  renderCompare(state);
  renderMeasured(state);
}

/** The runs in the table's order, with their rank under that order. */
/** @param {PageState} state */
export function sortedRuns(state) {
  const { key, descending } = state.compareSort;
  const col = COMPARE_COLUMNS.find((c) => c[0] === key);
  const sortKey = key === 'rank' ? 'id' : key;
  const cmp = (a, b) => {
    const x = a[sortKey];
    const y = b[sortKey];
    if (x === null || y === null) return Number(x === null) - Number(y === null); // missing values last
    const d = col && col[2] === 'text' ? String(x).localeCompare(String(y)) : x - y;
    return descending ? -d : d;
  };
  return [...state.runs].sort((a, b) => cmp(a, b) || a.id - b.id).map((r, i) => ({ ...r, rank: i + 1 }));
}

function cellText(key, v) {
  if (v === null || v === undefined) return '—';
  if (key === 'sentences_per_s' || key === 'gflop_per_s_per_core') return v.toFixed(1);
  if (['structure_avg', 'relation_avg', 'stsb_test_spearman', 'pairwise_all'].includes(key)) return fmt2(v);
  if (key === 'finished') return new Date(v).toLocaleTimeString();
  if (key === 'encoder') return v === 'static' ? 'syntax-blind baseline' : 'model';
  if (key === 'prefix') return v ? JSON.stringify(v) : 'none';
  return String(v);
}

/** @param {PageState} state @param {[string, string, string]} column */
function headerCell(state, [key, label]) {
  const active = state.compareSort.key === key;
  const btn = el('button', { type: 'button', class: 'sort', data: { sort: key } }, label,
    active ? (state.compareSort.descending ? ' ▼' : ' ▲') : '');
  btn.addEventListener('click', () => {
    const col = COMPARE_COLUMNS.find((c) => c[0] === key);
    state.compareSort = active
      ? { key, descending: !state.compareSort.descending }
      : { key, descending: col[2] === 'num' && key !== 'rank' };
    renderCompare(state);
  });
  const th = el('th', { scope: 'col' }, btn);
  if (active) th.setAttribute('aria-sort', state.compareSort.descending ? 'descending' : 'ascending');
  return th;
}

/** @param {PageState} state */
export function renderCompare(state) {
  const panel = $('compare');
  panel.hidden = state.runs.length === 0;
  if (panel.hidden) return;
  const rows = sortedRuns(state);
  $('compare-head').replaceChildren(...COMPARE_COLUMNS.map((c) => headerCell(state, c)));
  $('compare-body').replaceChildren(...rows.map((r) => el('tr', { data: { run: String(r.id) } },
    ...COMPARE_COLUMNS.map(([key]) => el('td', {
      class: typeof r[key] === 'number' ? 'num' : '',
      data: { col: key, value: r[key] === null ? '' : String(r[key]) },
      ...(key === 'source' && r.sha256 ? { title: `sha256 ${r.sha256}` } : {}),
    }, cellText(key, r[key]))))));
  $('compare-count').textContent = `${rows.length} run${rows.length === 1 ? '' : 's'} in this tab`;
  try {
    if (!state.compareChart) state.compareChart = createBars($('compare-chart'));
    const labels = rows.map((r) => `${r.rank}. ${r.encoder === 'model' ? r.model : 'baseline'} · ${r.dtype} · ${r.split}` +
      (r.prefix ? ` · ${JSON.stringify(r.prefix)}` : ''));
    state.compareChart.update(labels, SCORES.map(([key, label, color]) => ({ label, color, data: rows.map((r) => r[key]) })));
  } catch (err) {
    setMessage($('compare-msg'), err.message, 'error');
  }
}

/** A CSV field as the Rust csv writer quotes it (only when needed). */
const csvField = (v) => {
  const s = v === null || v === undefined ? '' : String(v);
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
};

/** The CSV's columns: those of `sr-bench compare --csv` (label, model, dtype, split, encoder,
 * Spearman per SR file and avg for structure then relation, STS-B test, pairwise accuracy per
 * SR file and over all), then the page's own. */
export const CSV_COLUMNS = [
  'label', 'model', 'dtype', 'split', 'encoder',
  ...DIMENSIONS.flatMap((dim) => [...SR_FILES, 'avg'].map((f) => `${dim}_${f}`)), 'stsb_test_spearman',
  ...[...SR_FILES, 'all'].map((f) => `pairwise_${f}`),
  'rank', 'backend', 'source', 'sha256', 'finished', 'sentences_per_s', 'gflop_per_s',
  'gflop_per_s_per_core', 'data', 'czech_news_sts_pearson', 'own_pairs_spearman', 'prefix',
];

/** The run's label as `sr-bench compare` writes it: the prefix, when there is one, quoted. */
const runLabel = (r) => [r.model, r.dtype, r.split, r.encoder].join(' · ') + (r.prefix ? ` · ${JSON.stringify(r.prefix)}` : '');

/** What a run scored, in words: the SR files and STS-B test, Czech News STS, or a user's file. */
function dataOf(report) {
  const own = report.own_pairs;
  if (own) return `own pairs: ${own.name}`;
  const files = SR_FILES.filter((f) => DIMENSIONS.every((dim) => report.results?.[dim]?.[f]));
  const parts = [files.length === SR_FILES.length ? 'SR' : files.length ? `SR (${files.join(', ')})` : '',
    report.stsb_test ? 'STS-B test' : '', report.czech_news_sts ? 'Czech News STS' : ''];
  return parts.filter(Boolean).join(' + ');
}

/** The table as CSV, in the table's order, values unrounded as in the reports. */
/** @param {PageState} state */
export function compareCsv(state) {
  const value = (r, key) => (key === 'label' ? runLabel(r)
    : key in r.cells ? r.cells[key] : r[key]);
  const lines = [CSV_COLUMNS.join(',')];
  for (const r of sortedRuns(state)) lines.push(CSV_COLUMNS.map((k) => csvField(value(r, k))).join(','));
  return `${lines.join('\n')}\n`;
}

/** @param {PageState} state */
export function setupCompare(state) {
  $('compare-csv').addEventListener('click', () => download('sr-bench-compare.csv', 'text/csv', compareCsv(state)));
}
