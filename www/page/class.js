// @ts-check
// A class's quiz answers together, when the page is served by `sr-bench serve --class` (the
// class API under /api/class, src/cli/serve/class.rs). The teacher's page starts a class on
// the open quiz and shows its code, its link and its figures live (how many answered, the
// class's accuracy and spread, each student's agreement with the rest, the class majority
// against the gold, the model's and the baseline's accuracy on the same questions), exports
// the answers as CSV and deletes the class. A student's page opened on the link (`class=CODE`)
// sends its picks once the quiz is done, with a random device id and nothing else. A site
// without the class server keeps the quiz working on each device alone.

import { REQ } from '../shared/protocol.js';
import { messageOf } from '../shared/errors.js';
import { $, download, el, setMessage } from './ui.js';
import { BASE_URL } from './state.js';
import { scheduleUrlWrite, shareUrl } from './url-state.js';

/** @typedef {import('./state.js').PageState} PageState */

const API = new URL('api/class', BASE_URL).href;
/** How often the teacher's view asks for the figures. */
const POLL_MS = 2000;
const DEVICE_KEY = 'sr-bench.device';
const teacherKey = (code) => `sr-bench.class.${code}`;

/** The teacher's token for a class, kept for this tab's session (a reload keeps the teacher's
 * view); with storage off, nothing is kept (the page still holds it in `state.klass`). */
const tokens = {
  get(code) { try { return sessionStorage.getItem(teacherKey(code)); } catch { return null; } },
  set(code, token) { try { sessionStorage.setItem(teacherKey(code), token); } catch { /* this page only */ } },
  forget(code) { try { sessionStorage.removeItem(teacherKey(code)); } catch { /* nothing kept */ } },
};

/** The class API's answer, or an Error with its message. */
async function api(path, { method = 'GET', token = null, body = undefined } = {}) {
  const headers = /** @type {Record<string, string>} */ ({});
  if (token) headers.Authorization = `Bearer ${token}`;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(`${API}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  if (path.endsWith('.csv') && res.ok) return res.text();
  const json = await res.json().catch(() => ({}));
  if (!res.ok) throw new Error(json.error || `HTTP ${res.status}`);
  return json;
}

/** This device's random id (kept, so a second send replaces the first). */
function deviceId() {
  let id = null;
  try { id = localStorage.getItem(DEVICE_KEY); } catch { /* storage off: a new id each visit */ }
  if (!id || !/^[0-9a-f]{32}$/.test(id)) {
    id = [...crypto.getRandomValues(new Uint8Array(16))].map((b) => b.toString(16).padStart(2, '0')).join('');
    try { localStorage.setItem(DEVICE_KEY, id); } catch { /* this visit only */ }
  }
  return id;
}

const percent = (x) => (x === null || x === undefined ? '—' : `${x.toFixed(0)} %`);

function figure(label, value, note, data) {
  return el('div', { class: 'quiz-figure', data },
    el('span', { class: 'quiz-figure-label' }, label),
    el('span', { class: 'quiz-figure-value' }, value),
    el('span', { class: 'muted' }, note));
}

/** The teacher's view of the figures (`GET …/figures`) and the model's own answers. */
function renderFigures(state, r) {
  const f = r.figures;
  const spread = (s) => (s ? `± ${s.sd.toFixed(0)}, ${s.min.toFixed(0)}–${s.max.toFixed(0)} %` : 'no answers yet');
  const model = state.klass.model;
  $('class-figures').replaceChildren(
    figure('Answered', String(f.answered), `of the class's devices`, { figure: 'answered', value: String(f.answered) }),
    figure('The class', percent(f.accuracy?.mean), spread(f.accuracy), { figure: 'accuracy', value: String(f.accuracy?.mean ?? '') }),
    figure('Agree with the rest', percent(f.agreement_with_rest?.mean), f.agreement_with_rest ? spread(f.agreement_with_rest) : 'needs two students',
      { figure: 'agreement', value: String(f.agreement_with_rest?.mean ?? '') }),
    figure('Class majority = gold', percent(f.majority_vs_gold), 'the benchmark’s own scores', { figure: 'majority', value: String(f.majority_vs_gold ?? '') }),
    figure('The model', percent(model?.model.accuracy.accuracy), 'same questions', { figure: 'model', value: String(model?.model.accuracy.accuracy ?? '') }),
    figure('Syntax-blind baseline', percent(model?.baseline.accuracy.accuracy), 'same questions', { figure: 'baseline', value: String(model?.baseline.accuracy.accuracy ?? '') }),
  );
  $('class-students').replaceChildren(...f.students.map((s) => el('li', { data: { accuracy: String(s.accuracy) } },
    `${percent(s.accuracy)} right` + (s.agreement_with_rest === null ? '' : ` · agrees with the rest on ${percent(s.agreement_with_rest)}`))));
  $('class-summary').textContent = f.answered === 0 ? 'Waiting for the first answers…'
    : `${f.answered} answered. Per question, students who picked what the gold scores prefer: ` +
      f.per_question.map((q, i) => `${i + 1}: ${q.right}`).join(', ') + '.';
}

/** Polls the figures while the teacher's view is open. */
async function poll(state) {
  const k = state.klass;
  if (!k || !k.token || !state.quiz) return;
  try {
    if (!k.model && state.loaded) {
      const { seed, set, questions } = state.quiz;
      k.model = await state.engine.call(REQ.QUIZ, { set, seed, questions, min_gap: 2, answer: true, baseUrl: BASE_URL });
    }
    renderFigures(state, await api(`/${k.code}/figures`, { token: k.token }));
    setMessage($('class-status'), '');
  } catch (err) {
    setMessage($('class-status'), `The class's figures could not be read: ${messageOf(err)}`, 'warning');
  }
  if (state.klass === k) k.timer = setTimeout(() => poll(state), POLL_MS);
}

function showTeacher(state) {
  const k = state.klass;
  $('class-teacher').hidden = false;
  $('class-start').hidden = true;
  $('class-code').textContent = k.code;
  const link = shareUrl(state);
  $('class-link').textContent = link;
  $('class-link').setAttribute('href', link);
  poll(state);
}

/** Stops the teacher's view (the quiz was left, or the class deleted). */
export function leaveClass(state) {
  if (state.klass) clearTimeout(state.klass.timer);
  state.klass = null;
  $('class-teacher').hidden = true;
  $('class-start').hidden = state.classServer !== true;
}

/** A student's link (`class=CODE`): the class's quiz, its answers sent when done. Null: no
 * class server here (the quiz then runs alone). @returns {Promise<{seed: number, set: string, questions: number}|null>} */
export async function joinClass(state, code) {
  try {
    const c = await api(`/${encodeURIComponent(code)}`);
    const token = tokens.get(c.code);
    state.klass = { code: c.code, token, timer: 0, model: null };
    return c;
  } catch (err) {
    $('class-box').hidden = false;
    setMessage($('class-status'), `Class ${code}: ${messageOf(err)}. Your answers stay on this device.`, 'warning');
    return null;
  }
}

/** Whether this page is served with the class API, asked once, when a quiz first opens (not
 * on every page load: offline, or on a static host, nothing is asked until then). A static
 * site answers from its file `api/class`: {"class": false}. */
async function classServerHere(state) {
  if (state.classServer === null) state.classServer = await api('').then((r) => r.class === true, () => false);
  return state.classServer;
}

/** After `openQuiz`: "Start a class" where a class server is; for a joined class the teacher's
 * view, or the student's line. */
export async function afterQuizOpened(state) {
  const k = state.klass;
  if (!k) {
    const here = await classServerHere(state);
    $('class-box').dataset.server = String(here);
    if (state.klass) return; // a class was joined or started meanwhile
    $('class-box').hidden = !here;
    $('class-start').hidden = !here;
    return;
  }
  $('class-box').hidden = false;
  $('class-start').hidden = true; // one class at a time; a student's page never starts one
  scheduleUrlWrite(state);
  if (k.token) showTeacher(state);
  else setMessage($('class-status'), `You are in class ${k.code}: when you finish, your picks go to the teacher’s screen (no name, nothing else).`);
}

/** @param {PageState} state */
async function startClass(state) {
  const q = state.quiz;
  if (!q) return;
  try {
    const made = await api('', { method: 'POST', body: { seed: q.seed, set: q.set, questions: q.questions } });
    tokens.set(made.code, made.teacher);
    state.klass = { code: made.code, token: made.teacher, timer: 0, model: null };
    scheduleUrlWrite(state);
    showTeacher(state);
  } catch (err) {
    setMessage($('class-status'), `Could not start a class: ${messageOf(err)}`, 'error');
  }
}

/** The student's picks, once the quiz is done. */
async function sendPicks(state, picks) {
  const k = state.klass;
  if (!k || k.token) return;
  try {
    const r = await api(`/${k.code}/answers`, { method: 'POST', body: { device: deviceId(), picks } });
    $('class-status').dataset.sent = String(r.count);
    setMessage($('class-status'), `Sent to class ${k.code} (${r.count} answered so far).`);
  } catch (err) {
    setMessage($('class-status'), `Your answers could not be sent to class ${k.code}: ${messageOf(err)}`, 'error');
  }
}

/** @param {PageState} state */
export function setupClass(state) {
  $('class-start').addEventListener('click', () => startClass(state));
  $('class-csv').addEventListener('click', async () => {
    const k = state.klass;
    try {
      download(`class-${k.code}.csv`, 'text/csv', await api(`/${k.code}/answers.csv`, { token: k.token }));
    } catch (err) {
      setMessage($('class-status'), `Could not export: ${messageOf(err)}`, 'error');
    }
  });
  $('class-delete').addEventListener('click', async () => {
    const k = state.klass;
    try {
      await api(`/${k.code}`, { method: 'DELETE', token: k.token });
      tokens.forget(k.code);
      leaveClass(state);
      scheduleUrlWrite(state);
      setMessage($('class-status'), `Class ${k.code} and its answers are deleted.`);
    } catch (err) {
      setMessage($('class-status'), `Could not delete: ${messageOf(err)}`, 'error');
    }
  });
  document.addEventListener('sr-bench:quiz-done', (e) => sendPicks(state, /** @type {CustomEvent} */ (e).detail.picks));
}
