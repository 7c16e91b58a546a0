// @ts-check
// The Results view: every model the project measured on real weights (docs/results/*.json in
// the repository, joined with the paper's Table 4 by `sr-bench results` into results.json when
// the site is built), the paper's own rows, and this tab's finished runs beside them: one
// table, each row with the command, the model file's sha256, the date and the machine that
// produced it.

import { $, el, fmt2 } from './ui.js';
import { BASE_URL } from './state.js';
import { coversEveryFile } from './results.js';

/** @typedef {import('./state.js').PageState} PageState */

/** [key, heading] of the table's columns. @type {Array<[string, string]>} */
const COLUMNS = [
  ['who', 'measured by'],
  ['model', 'model'],
  ['dtype', 'dtype'],
  ['split', 'split'],
  ['encoder', 'encoder'],
  ['structure_avg', 'structure avg'],
  ['relation_avg', 'relation avg'],
  ['stsb', 'STS-B test'],
  ['ndcg10', 'retrieval nDCG@10'],
  ['pairwise', 'right rewrite picked %'],
  ['date', 'date'],
  ['machine', 'machine'],
  ['command', 'command'],
  ['sha256', 'model sha256'],
];
const NUMBERS = new Set(['structure_avg', 'relation_avg', 'stsb', 'ndcg10', 'pairwise']);

const num = (x) => (Number.isFinite(x) ? x : null);
const encoderText = (encoder, prefix) => (encoder === 'static' ? 'syntax-blind baseline'
  : prefix ? `model, prefix ${JSON.stringify(prefix)}` : 'model');

/** A report's figures (Spearman ×100, pairwise %, nDCG@10 ×100); the averages only when every
 * SR file was scored (a partial average is not Table 4's). */
export function reportFigures(report) {
  const every = coversEveryFile(report);
  const ndcg = num(report.retrieval?.stsb_test?.ndcg_at_10);
  return {
    model: report.model,
    dtype: report.dtype,
    split: report.split,
    encoder: encoderText(report.encoder, report.prefix),
    structure_avg: every ? num(report.results?.structure?.avg_spearman) : null,
    relation_avg: every ? num(report.results?.relation?.avg_spearman) : null,
    stsb: num(report.stsb_test?.spearman),
    ndcg10: ndcg === null ? null : 100 * ndcg,
    pairwise: num(report.pairwise?.all?.accuracy),
  };
}

/** The rows of results.json: the project's, then the paper's. */
function recordedRows(measured) {
  const project = measured.rows.map((r) => ({
    who: 'sr-bench', id: r.id, ...reportFigures(r.report),
    date: r.date, machine: r.machine, command: r.command, sha256: r.model_sha256,
  }));
  const paper = Object.entries(measured.paper).map(([model, row]) => ({
    who: 'paper', id: `paper:${model}`, model, dtype: 'fp32', split: 'full', encoder: 'model',
    structure_avg: num(row.structure.avg), relation_avg: num(row.relation.avg),
    stsb: null, ndcg10: null, pairwise: null,
    date: '2023', machine: '—', command: 'Zhang et al. 2023, Table 4', sha256: '—',
  }));
  return [...project, ...paper];
}

/** This tab's finished runs (compare.js rows) in the same layout. */
function tabRows(state) {
  const cores = navigator.hardwareConcurrency;
  return state.runs.map((r) => ({
    who: 'you', id: `run:${r.id}`, model: r.model, dtype: r.dtype, split: r.split,
    encoder: encoderText(r.encoder, r.prefix),
    structure_avg: r.structure_avg, relation_avg: r.relation_avg, stsb: r.stsb_test_spearman,
    ndcg10: r.retrieval_ndcg10, pairwise: r.pairwise_all,
    date: new Date(r.finished).toISOString().slice(0, 10),
    machine: `this browser (${r.backend}${cores ? `, ${cores} cores` : ''})`,
    command: `this page: ${r.split} split`, sha256: r.sha256 || '—',
  }));
}

function cell(key, row) {
  const v = row[key];
  if (NUMBERS.has(key)) return el('td', { class: 'num', data: { col: key, value: v === null ? '' : String(v) } }, fmt2(v));
  if (key === 'sha256' && v.length === 64) return el('td', { class: 'hash', title: v, data: { col: key } }, `${v.slice(0, 12)}…`);
  return el('td', { data: { col: key } }, v ?? '—');
}

/** Draws the table: recorded rows, then this tab's runs. */
/** @param {PageState} state */
export function renderMeasured(state) {
  if (!state.measured) return;
  const rows = [...recordedRows(state.measured), ...tabRows(state)];
  $('measured-head').replaceChildren(...COLUMNS.map(([, label]) => el('th', { scope: 'col' }, label)));
  $('measured-body').replaceChildren(...rows.map((r) => el('tr', { data: { who: r.who, id: r.id } },
    ...COLUMNS.map(([key]) => cell(key, r)))));
  $('measured').hidden = false;
}

/** Fetches results.json (made at build time) and shows the table; a site without it shows none. */
/** @param {PageState} state */
export async function setupMeasured(state) {
  try {
    const res = await fetch(new URL('results.json', BASE_URL), { cache: 'no-cache' });
    if (!res.ok) return;
    const measured = await res.json();
    if (!Array.isArray(measured?.rows) || typeof measured?.paper !== 'object') return;
    state.measured = measured;
    renderMeasured(state);
  } catch {
    // Offline without a cached copy: the view stays hidden; the rest of the page works.
  }
}
