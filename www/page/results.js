// @ts-check
// Step 4, the results: the Spearman table beside the paper's Table 4 (`report.paper`, from Rust),
// STS-B test, the cosine-vs-gold scatter and the most mis-ranked pairs (`pair.rank_gap`, from Rust).

import { SR_FILES, DIMENSIONS } from '../shared/protocol.js';
import { createScatter } from './charts.js';
import { $, el, fmt2, fmtSigned, formatBytes, formatDuration, nf0, setMessage } from './ui.js';
import { modelSource } from './export.js';
import { prefixLabel } from './prefix.js';

/** @typedef {import('./state.js').PageState} PageState */

/** Pairs shown in the mis-ranked list. */
const MISRANKED_SHOWN = 10;

/** The SR files a report has cells for (SR_FILES order): all six, or those a run of part of the
 * data chose. */
export function evaluatedFiles(report) {
  return SR_FILES.filter((f) => DIMENSIONS.every((dim) => report.results?.[dim]?.[f]));
}

/** Whether the report covers all six SR files (only then is its avg Table 4's). */
export const coversEveryFile = (report) => evaluatedFiles(report).length === SR_FILES.length;

function caption(report, timings) {
  const paper = report.paper;
  const paperNote = paper
    ? (report.split === 'quick' ? ' · the paper\'s values are for the full benchmark: expect larger differences on the quick sample' : '')
    : report.encoder === 'static' ? ' · the paper has no values for the baseline' : ' · the paper reports no values for this model';
  const files = evaluatedFiles(report);
  const dataNote = (files.length < SR_FILES.length ? ` · ${files.length} of ${SR_FILES.length} SR files (${files.join(', ')}): ` +
    'the avg is theirs, not Table 4\'s' : '') + (report.stsb_test ? '' : ' · no STS-B test');
  const prefixNote = report.prefix ? ` · every text read with the prefix ${prefixLabel(report.prefix)}` : '';
  return `${report.model} · ${report.dtype} · split ${report.split} · ${nf0.format(timings.sentences)} sentences, ` +
    `${formatDuration(timings.total_ms)}${prefixNote}${dataNote}${paperNote}`;
}

/** One table cell: ours, the paper's and the difference; Pearson, CI and n on demand. */
function resultCell(report, dim, f) {
  const res = (report.results && report.results[dim]) || {};
  const cell = f === 'avg' ? { spearman: res.avg_spearman } : (res[f] || {});
  const ours = cell.spearman;
  // No comparison for a file the run left out, nor for the avg of some files only.
  const compared = Number.isFinite(ours) && (f !== 'avg' || coversEveryFile(report));
  const ref = compared && report.paper && report.paper[dim] ? report.paper[dim][f] : undefined;
  const td = el('td', { data: { cell: `${dim}-${f}`, value: Number.isFinite(ours) ? String(ours) : '' } });
  td.append(el('span', { class: 'v' }, fmt2(ours)));
  if (Number.isFinite(ref)) {
    const d = ours - ref;
    td.append(el('span', { class: 'ref' }, `paper ${fmt2(ref)}`),
      el('span', { class: `delta ${Math.abs(d) < 1 ? 'close' : 'far'}`, data: { value: String(d) } }, `Δ ${fmtSigned(d)}`));
  }
  if (f !== 'avg') {
    const ci = Array.isArray(cell.spearman_ci95) ? cell.spearman_ci95 : null;
    td.append(el('span', { class: 'extra', data: { pearson: String(cell.pearson) } },
      'Pearson ', el('span', { class: 'nowrap' }, fmt2(cell.pearson))),
    el('span', { class: 'extra' }, ci ? '95% CI ' : '', el('span', { class: 'nowrap' }, ci ? `[${fmt2(ci[0])}, ${fmt2(ci[1])}]` : '')),
    el('span', { class: 'extra muted' }, Number.isFinite(cell.n) ? `n = ${nf0.format(cell.n)}` : ''));
  }
  return td;
}

/** For a file from this computer: its name, size, sha256 and max sequence length. */
function sourceLine(load) {
  const src = modelSource(load);
  if (src.kind !== 'local file') return '';
  return `Model: local file ${src.file_name} (${formatBytes(src.bytes)}), sha256 ${src.sha256}` +
    `, max sequence length ${load.info.max_seq_length}${src.max_seq_length ? ' (chosen)' : ' (the file’s)'}.`;
}

/** Czech News STS rows: [label, agreement or bound, key]; the oracle has MSE figures only. */
const CZECH_COLUMNS = ['pearson', 'spearman', 'mse_unit', 'rmse_unit', 'mse_raw', 'rmse_raw'];

/** The Czech table (the CLI's `eval-czech` rows, the baseline's too) and its finding.
 * @param {any} czech the report's `czech_news_sts` @param {any} baseline the baseline's, or null */
function renderCzech(czech, baseline) {
  $('czech-results').hidden = !czech;
  if (!czech) return;
  const rows = [['model', czech.model, 'model'], ...(baseline ? [['syntax-blind baseline', baseline.model, 'baseline']] : []),
    ['random human annotator', czech.random_human, 'random-human'], ['oracle bound', czech.oracle, 'oracle']];
  $('czech-body').replaceChildren(...rows.map(([label, figures, key]) => el('tr', { data: { row: key } },
    el('th', { scope: 'row' }, label),
    ...CZECH_COLUMNS.map((c) => {
      const v = figures[c];
      const scale = c === 'pearson' || c === 'spearman';
      return Number.isFinite(v)
        ? el('td', { class: 'num', data: { key: c, value: String(v) } }, scale ? fmt2(v) : v.toFixed(4))
        : el('td', { class: 'num muted' }, '—');
    }))));
  const m = czech.model;
  const h = czech.random_human;
  const beats = m.pearson > h.pearson && m.spearman > h.spearman;
  const neither = m.pearson <= h.pearson && m.spearman <= h.spearman;
  $('czech-finding').textContent = beats
    ? `The model ranks these Czech pairs better than a random Czech annotator does (Pearson ${fmt2(m.pearson)} against ${fmt2(h.pearson)}, Spearman ${fmt2(m.spearman)} against ${fmt2(h.spearman)}); its cosines are not on the annotators’ scale, so its MSE is far larger.`
    : neither
      ? `The model does not reach a random Czech annotator (Pearson ${fmt2(m.pearson)} against ${fmt2(h.pearson)}, Spearman ${fmt2(m.spearman)} against ${fmt2(h.spearman)}).`
      : `The model and a random Czech annotator are level: Pearson ${fmt2(m.pearson)} against ${fmt2(h.pearson)}, Spearman ${fmt2(m.spearman)} against ${fmt2(h.spearman)}.`;
}

/** The per-pair label of a user's own pairs (Rust's OWN_LABEL): the scatter's file choice. */
export const OWN_FILE = 'own_pairs';
const OWN_COLUMNS = ['n', 'spearman', 'spearman_ci95', 'pearson', 'mse', 'rmse'];

/** The own pairs table: a row for the STS layout's pairs, or one per SR dimension. */
function renderOwn(own) {
  $('own-results').hidden = !own;
  if (!own) return;
  $('own-title').textContent = `Your own pairs: ${own.name}`;
  const rows = ['similarity', 'structure', 'relation'].filter((k) => own[k]);
  $('own-body').replaceChildren(...rows.map((k) => el('tr', { data: { row: k } },
    el('th', { scope: 'row' }, k === 'similarity' ? 'all pairs' : k),
    ...OWN_COLUMNS.map((c) => {
      const v = own[k][c];
      if (c === 'spearman_ci95') return el('td', { class: 'num' }, Array.isArray(v) ? `[${fmt2(v[0])}, ${fmt2(v[1])}]` : '—');
      const text = !Number.isFinite(v) ? '—' : c === 'n' ? nf0.format(v) : c.startsWith('mse') || c === 'rmse' ? v.toFixed(4) : fmt2(v);
      return el('td', { class: 'num', data: { key: c, value: Number.isFinite(v) ? String(v) : '' } }, text);
    }))));
  $('own-note').textContent = `Spearman and Pearson ×100 of the model's cosine against your scores (${own.layout === 'sr'
    ? 'the SR files’ layout: each original against its structural and its relational variant' : 'one score per pair'}); ` +
    `MSE and RMSE compare the cosine with your score divided by ${own.scale_max}, the smallest of 1, 5, 6, 10 and 100 that holds every score.`;
}

/** The pairwise accuracy: a row of the table (per file, "all" in the average's column) and a
 * sentence a class reads — how often the rewrite closer to the original is the one with the
 * higher gold score, per 100, beside a coin's 50 and the syntax-blind baseline's last run in
 * this tab on the same split. */
/** @param {PageState} state */
function renderPairwise(state, report, body) {
  const pairwise = report.pairwise;
  const note = $('pairwise-note');
  note.hidden = !pairwise;
  if (!pairwise) return;
  const accuracyText = (a) => (a && Number.isFinite(a.accuracy) ? fmt2(a.accuracy) : '—');
  const row = el('tr', { data: { row: 'pairwise' } },
    el('th', { scope: 'row', title: 'Pairwise accuracy (%): the model picks the rewrite closer to the original; right when it has the higher gold score' },
      'right rewrite %'));
  for (const f of [...SR_FILES, 'all']) {
    const a = f === 'all' ? pairwise.all : pairwise.files[f];
    row.append(el('td', { class: 'num', data: { key: f, value: a && Number.isFinite(a.accuracy) ? String(a.accuracy) : '' },
      title: a ? `${a.n} rows` : '' }, accuracyText(a)));
  }
  body.append(row);
  const all = pairwise.all;
  const value = $('pairwise-value');
  value.value = Number.isFinite(all.accuracy) ? String(all.accuracy) : '';
  value.textContent = Number.isFinite(all.accuracy) ? `${fmt2(all.accuracy)} %` : '—';
  const baseline = [...state.runs].reverse().find((r) => r.encoder === 'static' && r.split === report.split && r.pairwise_all !== null);
  const interval = all.ci95 ? `95 % interval ${fmt2(all.ci95[0])}–${fmt2(all.ci95[1])}` : '';
  $('pairwise-extra').textContent = `of ${all.n} SR rows whose two rewrites' gold scores differ by ≥ ${pairwise.min_gap} ` +
    `(${interval}); a coin: ${fmt2(pairwise.chance)}` +
    (report.encoder === 'static' ? '' : baseline ? `; the syntax-blind baseline: ${fmt2(baseline.pairwise_all)}`
      : '; run the syntax-blind baseline to see its figure');
}

/** @param {PageState} state */
export function renderResults(state) {
  const { report, timings, load } = state.result;
  $('results').hidden = false;
  $('results-caption').textContent = caption(report, timings);
  const source = $('results-source');
  source.textContent = sourceLine(load);
  source.hidden = !source.textContent;
  source.dataset.sha256 = load.entry.local ? load.entry.sha256 : '';

  renderCzech(report.czech_news_sts || null, state.result.czech_baseline || null);
  renderOwn(report.own_pairs || null);
  const files = evaluatedFiles(report);
  $('results-head').replaceChildren(el('th', { scope: 'col' }, 'dimension'),
    ...SR_FILES.map((f) => el('th', { scope: 'col' }, f)),
    el('th', { scope: 'col' }, files.length < SR_FILES.length ? `avg of ${files.length}` : 'avg'));
  const body = $('results-body');
  body.replaceChildren();
  for (const dim of DIMENSIONS) {
    const row = el('tr', {}, el('th', { scope: 'row' }, dim));
    for (const f of [...SR_FILES, 'avg']) row.append(resultCell(report, dim, f));
    body.append(row);
  }

  renderPairwise(state, report, body);

  const st = report.stsb_test || {};
  const stEl = $('stsb-test-value');
  stEl.value = Number.isFinite(st.spearman) ? String(st.spearman) : '';
  stEl.dataset.value = stEl.value;
  stEl.textContent = fmt2(st.spearman);
  $('stsb-test-extra').textContent = Number.isFinite(st.pearson) ? `(Pearson ${fmt2(st.pearson)})`
    : report.stsb_test ? '' : '(not run)';

  const fileSel = /** @type {HTMLSelectElement} */ ($('plot-file'));
  if (!fileSel.options.length) {
    for (const f of SR_FILES) fileSel.append(el('option', { value: f }, f));
    fileSel.append(el('option', { value: OWN_FILE, hidden: '' }, 'your own pairs'));
  }
  const ownOption = /** @type {HTMLOptionElement} */ (fileSel.querySelector(`option[value="${OWN_FILE}"]`));
  ownOption.hidden = !report.own_pairs;
  // The scatter shows a file the run has.
  if (report.own_pairs) fileSel.value = OWN_FILE;
  else if (files.length && !files.includes(fileSel.value)) fileSel.value = files[0];
  renderPlot(state);
}

/** The scatter and the mis-ranked list for the chosen file and dimension. */
/** @param {PageState} state */
export function renderPlot(state) {
  if (!state.result) return;
  const { report } = state.result;
  const file = $('plot-file').value || SR_FILES[0];
  const own = file === OWN_FILE ? report.own_pairs : null;
  // An STS-layout file has one kind of pair ("similarity"), whatever the dimension chosen.
  const dim = own && own.layout === 'sts' ? 'similarity' : $('plot-dim').value;
  const pairs = (report.pairs || []).filter((p) => p.file === file && p.dimension === dim);
  const res = own ? own[dim] : report.results?.[dim]?.[file];
  const title = `${file} · ${dim} · ${pairs.length} pairs · Spearman ${fmt2(res?.spearman)}`;
  const points = pairs.map((p) => ({ x: p.gold, y: p.cosine, line: p.line }));
  try {
    if (!state.scatter) state.scatter = createScatter($('scatter'));
    state.scatter.update(points, title);
    $('scatter').setAttribute('aria-label', `Scatter plot: ${title}`);
  } catch (err) {
    setMessage($('run-msg'), err.message, 'error');
  }

  // rank_gap: rank of the cosine minus rank of the gold score within this file and dimension.
  const worst = pairs.filter((p) => Number.isFinite(p.rank_gap))
    .sort((x, y) => Math.abs(y.rank_gap) - Math.abs(x.rank_gap)).slice(0, MISRANKED_SHOWN);
  const body = $('misranked-body');
  body.replaceChildren();
  for (const p of worst) {
    const d = p.rank_gap;
    body.append(el('tr', {},
      el('td', { class: 'num' }, `${d > 0 ? '+' : '−'}${nf0.format(Math.abs(d))}`),
      el('td', { class: 'num' }, String(p.gold)),
      el('td', { class: 'num' }, Number.isFinite(p.cosine) ? p.cosine.toFixed(3) : '—'),
      el('td', {}, p.sentence1),
      el('td', {}, p.sentence2)));
  }
  if (!worst.length) body.append(el('tr', {}, el('td', { colspan: '5' }, 'No pairs for this file and dimension.')));
}
