// @ts-check
// "You against the model": a quiz that makes the visitor the annotator. Each question shows an
// original sentence and two rewrites (SR), or two pairs of Czech sentences (Czech News STS, for
// a multilingual model); the visitor picks the one closer in meaning. At the end: their
// accuracy, the model's and the syntax-blind baseline's on the same questions, and row by row
// where they and the model disagreed. The questions come from a seed kept in the link
// (`#quiz=SEED&qset=sr&qn=12`), so a whole class opening it gets the same ones. The engine draws
// and marks them (engine/quiz.js, `sr-bench quiz`); this module asks, shows and counts.

import { REQ } from '../shared/protocol.js';
import { messageOf } from '../shared/errors.js';
import { $, el, setMessage } from './ui.js';
import { BASE_URL, isMultilingual } from './state.js';
import { scheduleUrlWrite, shareUrl } from './url-state.js';
import { afterQuizOpened, leaveClass } from './class.js';

/** @typedef {import('./state.js').PageState} PageState */
/** @typedef {import('../shared/protocol.js').QuizResult} QuizResult */

export const QUIZ_QUESTIONS = 12;
/** Only questions whose two gold scores differ by at least this (pairwise accuracy's default). */
const MIN_GAP = 2;
/** Seeds a class can read off a projector. */
const MAX_SEED = 99_999;

const ASK = {
  sr: 'Which rewrite is closer in meaning to the original?',
  czech: 'Which pair of sentences means more nearly the same?',
};

/** A fresh seed, 1..MAX_SEED. */
export function newSeed() {
  return 1 + (crypto.getRandomValues(new Uint32Array(1))[0] % MAX_SEED);
}

/** Opens the quiz (a fresh seed unless one is given), draws its questions, and asks the first. */
/** `inClass`: the quiz of the class the page joined (class.js); any other quiz leaves it. */
/** @param {PageState} state @param {{seed?: number|null, set?: string|null, questions?: number|null, inClass?: boolean}} [want] */
export async function openQuiz(state, want = {}) {
  if (!want.inClass) leaveClass(state);
  const multilingual = !!(state.loaded && isMultilingual(state.loaded.info));
  /** @type {'sr'|'czech'} */
  const set = want.set === 'czech' || want.set === 'sr' ? want.set : multilingual ? 'czech' : 'sr';
  const questions = Number.isInteger(want.questions) && want.questions > 0 && want.questions <= 100 ? want.questions : QUIZ_QUESTIONS;
  const seed = Number.isInteger(want.seed) && want.seed >= 0 && want.seed < 2 ** 32 ? want.seed : newSeed();
  const quiz = { seed, set, questions, drawn: null, answers: [], at: 0, scored: null };
  state.quiz = quiz;
  const root = $('quiz');
  root.hidden = false;
  document.documentElement.classList.add('in-quiz');
  root.dataset.state = 'drawing';
  root.dataset.seed = String(seed);
  root.dataset.set = set;
  for (const r of /** @type {NodeListOf<HTMLInputElement>} */ (document.querySelectorAll('input[name="quiz-set"]'))) r.checked = r.value === set;
  $('quiz-result').hidden = true;
  $('quiz-question').hidden = true;
  scheduleUrlWrite(state);
  showLink(state);
  setMessage($('quiz-status'), 'Drawing the questions…');
  root.scrollIntoView({ block: 'start' });
  try {
    const r = await state.engine.call(REQ.QUIZ, { set, seed, questions, min_gap: MIN_GAP, answer: false, baseUrl: BASE_URL });
    if (state.quiz !== quiz) return;
    quiz.drawn = r.quiz;
    setMessage($('quiz-status'), '');
    root.dataset.state = 'asking';
    afterQuizOpened(state);
    ask(state);
  } catch (err) {
    if (state.quiz !== quiz) return;
    root.dataset.state = 'error';
    setMessage($('quiz-status'), `Could not draw the questions: ${messageOf(err)}`, 'error');
  }
}

/** Leaves the quiz (the link forgets it). */
/** @param {PageState} state */
export function closeQuiz(state) {
  leaveClass(state);
  state.quiz = null;
  $('quiz').hidden = true;
  document.documentElement.classList.remove('in-quiz');
  scheduleUrlWrite(state);
  $('quiz-open').focus();
}

/** The link a class opens to get these questions. @param {PageState} state */
function showLink(state) {
  const url = shareUrl(state);
  const link = $('quiz-link');
  link.textContent = url;
  link.setAttribute('href', url);
  $('quiz-seed').textContent = String(state.quiz?.seed ?? '');
}

/** Shows question `quiz.at`. @param {PageState} state */
function ask(state) {
  const quiz = state.quiz;
  if (!quiz || !quiz.drawn) return;
  const q = quiz.drawn.questions[quiz.at];
  const box = $('quiz-question');
  box.hidden = false;
  box.dataset.index = String(quiz.at);
  box.dataset.file = q.file;
  box.dataset.line = q.options.map((o) => o.line).join(',');
  $('quiz-count').textContent = `Question ${quiz.at + 1} of ${quiz.drawn.questions.length}`;
  $('quiz-ask').textContent = ASK[quiz.drawn.set];
  const sr = quiz.drawn.set === 'sr';
  $('quiz-original-line').hidden = !sr;
  $('quiz-original').textContent = sr ? q.options[0].a : '';
  q.options.forEach((o, i) => {
    const button = $(`quiz-option-${i}`);
    button.replaceChildren(...(sr ? [o.b] : [o.a, el('br'), o.b]));
    button.setAttribute('aria-pressed', String(quiz.answers[quiz.at] === i));
  });
  $('quiz-back').disabled = quiz.at === 0;
  $('quiz-option-0').focus();
}

/** The visitor picked option `i` of the current question. @param {PageState} state */
function pick(state, i) {
  const quiz = state.quiz;
  if (!quiz || !quiz.drawn || quiz.at >= quiz.drawn.questions.length) return;
  quiz.answers[quiz.at] = i;
  if (quiz.at + 1 < quiz.drawn.questions.length) {
    quiz.at += 1;
    ask(state);
  } else {
    finish(state);
  }
}

/** Every question answered: the model's answers (once a model is loaded), then the verdict. */
/** @param {PageState} state */
async function finish(state) {
  const quiz = state.quiz;
  const root = $('quiz');
  $('quiz-question').hidden = true;
  root.dataset.state = 'scoring';
  // A class's page sends the picks now (class.js), whatever the model does.
  document.dispatchEvent(new CustomEvent('sr-bench:quiz-done', { detail: { picks: [...quiz.answers] } }));
  while (!state.loaded) {
    if (state.quiz !== quiz) return;
    if (!state.loadingKey) {
      setMessage($('quiz-status'), 'Load a model (the panel at the top) to see how it answers the same questions.', 'warning');
      await new Promise((resolve) => { document.addEventListener('sr-bench:model-loaded', resolve, { once: true }); });
    } else {
      setMessage($('quiz-status'), 'Waiting for the model to load…');
      await new Promise((resolve) => { setTimeout(resolve, 200); });
    }
  }
  setMessage($('quiz-status'), 'The model answers the same questions…');
  try {
    const { seed, set, questions } = quiz;
    const r = await state.engine.call(REQ.QUIZ, { set, seed, questions, min_gap: MIN_GAP, answer: true, baseUrl: BASE_URL });
    if (state.quiz !== quiz) return;
    quiz.scored = r;
    setMessage($('quiz-status'), '');
    renderResult(state, r);
    root.dataset.state = 'done';
  } catch (err) {
    if (state.quiz !== quiz) return;
    root.dataset.state = 'error';
    setMessage($('quiz-status'), `The model could not answer: ${messageOf(err)}`, 'error');
  }
}

const count = (x) => (Number.isInteger(x) ? String(x) : x.toFixed(1));

function figure(id, label, correct, n, note) {
  return el('div', { class: 'quiz-figure', id, data: { correct: String(correct), n: String(n) } },
    el('span', { class: 'quiz-figure-label' }, label),
    el('span', { class: 'quiz-figure-value' }, `${count(correct)} of ${n}`),
    el('span', { class: 'muted' }, note));
}

/** @param {PageState} state @param {QuizResult} r */
function renderResult(state, r) {
  const quiz = state.quiz;
  const qs = r.quiz.questions;
  const n = qs.length;
  const mine = qs.filter((q, i) => quiz.answers[i] === q.answer).length; // the model's count (ties ½) is Rust's
  const model = r.model.accuracy.correct;
  const baseline = r.baseline.accuracy.correct;
  const name = state.loaded ? `${state.loaded.info.name} · ${state.loaded.info.dtype}` : 'the model';
  $('quiz-figures').replaceChildren(
    figure('quiz-person', 'You', mine, n, 'your picks'),
    figure('quiz-model', 'The model', model, n, name),
    figure('quiz-baseline', 'Syntax-blind baseline', baseline, n, 'averaged word vectors, no word order'),
    figure('quiz-coin', 'A coin', n / 2, n, 'on average'),
  );
  const disagree = qs.filter((q, i) => quiz.answers[i] !== r.model.choices[i]).length;
  $('quiz-summary').textContent = `You picked the closer one in ${count(mine)} of ${n}, the model in ${count(model)}, ` +
    `the syntax-blind baseline in ${count(baseline)}; a coin would average ${count(n / 2)}. ` +
    `You and the model disagreed on ${disagree} question${disagree === 1 ? '' : 's'}.`;
  const pickText = (q, c) => (c === null || c === undefined ? 'tie' : c === q.answer ? '✓ right' : '✗ wrong');
  $('quiz-rows').replaceChildren(...qs.map((q, i) => {
    const you = quiz.answers[i];
    const them = r.model.choices[i];
    const option = (o, k) => el('td', { class: k === q.answer ? 'quiz-gold' : '' },
      r.quiz.set === 'sr' ? o.b : `${o.a} / ${o.b}`, el('span', { class: 'muted' }, ` (gold ${o.gold.toFixed(1)})`));
    return el('tr', { class: you !== them ? 'quiz-disagree' : '', data: { question: String(i), answer: String(q.answer), person: String(you), model: String(them) } },
      el('th', { scope: 'row' }, String(i + 1)),
      el('td', {}, r.quiz.set === 'sr' ? q.options[0].a : q.file),
      option(q.options[0], 0), option(q.options[1], 1),
      el('td', {}, pickText(q, you)), el('td', {}, pickText(q, them)), el('td', {}, pickText(q, r.baseline.choices[i])));
  }));
  $('quiz-result').hidden = false;
  $('quiz-result').focus();
}

/** @param {PageState} state */
export function setupQuiz(state) {
  $('quiz-open').addEventListener('click', () => openQuiz(state, { set: state.quiz?.set }));
  $('quiz-close').addEventListener('click', () => closeQuiz(state));
  $('quiz-new').addEventListener('click', () => openQuiz(state, { set: state.quiz?.set }));
  $('quiz-again').addEventListener('click', () => openQuiz(state, { set: state.quiz?.set }));
  $('quiz-back').addEventListener('click', () => {
    if (state.quiz && state.quiz.at > 0) { state.quiz.at -= 1; ask(state); }
  });
  for (const i of [0, 1]) $(`quiz-option-${i}`).addEventListener('click', () => pick(state, i));
  // The link names the model once one is loaded.
  document.addEventListener('sr-bench:model-loaded', () => { if (state.quiz) showLink(state); });
  for (const r of /** @type {NodeListOf<HTMLInputElement>} */ (document.querySelectorAll('input[name="quiz-set"]'))) {
    r.addEventListener('change', () => { if (r.checked) openQuiz(state, { set: r.value }); });
  }
}
