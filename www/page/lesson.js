// @ts-check
// "Lesson": six steps for a projector, one click each, every number from the live model —
// a paraphrase by passive voice (high, rightly), a concept swap (high, wrongly), why (the token-pair
// heat map), word salad (still high), the benchmark (STS-B high, SR low), and the class against
// the model (the quiz); for a model with a multilingual vocabulary, word order in Czech before
// the benchmark. Arrow keys (and a
// clicker's Page Up / Page Down) move between steps; Escape leaves. The engine requests are the
// playground's and the benchmark's (protocol.js); this module only asks and shows.

import { REQ } from '../shared/protocol.js';
import { $, el, fmt2, setMessage } from './ui.js';
import { isMultilingual, selectedEntry } from './state.js';
import { loadModel } from './model-panel.js';
import { renderHeatMap } from './heatmap.js';
import { runBenchmark, wholeBenchmark } from './benchmark.js';
import { STRIP_SEEDS } from './word-order.js';
import { baseModelName, trainingText } from './trained.js';
import { coversEveryFile } from './results.js';
import { openQuiz, QUIZ_QUESTIONS } from './quiz.js';

/** @typedef {import('./state.js').PageState} PageState */

const PASSIVE = { a: 'The chef cooked the meal.', b: 'The meal was cooked by the chef.' };
const SWAP = { a: 'Tom likes Taylor Swift.', b: 'Taylor Swift likes Tom.' };
/** Czech: the same meaning in another order, and the roles reversed by the endings alone. */
const CZECH = { a: 'Petr miluje Marii.', same: 'Marii miluje Petr.', reversed: 'Petra miluje Marie.' };

const cos3 = (x) => x.toFixed(3);
/** How a cosine reads out loud (MiniLM-class models put most pairs above 0.5). */
const loudness = (c) => (c >= 0.8 ? 'High' : c >= 0.5 ? 'Fairly high' : 'Low');

/** Scores `pair`; `sameMeaning` says whether a high score is right (green) or wrong (red). */
/** @param {PageState} state */
async function scoreStep(state, pair, sameMeaning) {
  const { cosine } = await state.engine.call(REQ.SIMILARITY, pair);
  const high = cosine >= 0.5;
  const why = sameMeaning
    ? (high ? 'and rightly so: the meaning is the same.' : 'yet the meaning is the same: this model misses a paraphrase.')
    : (high ? 'but wrongly: the meaning changed and the model barely noticed.' : 'this model notices that the roles changed.');
  return { score: cosine, verdict: `${loudness(cosine)} — ${why}`, level: high === sameMeaning ? 'same' : 'diff' };
}

/** Each step: what it shows, its one action, and what the action finds (`run` → the punch line). */
const STEPS = [
  {
    title: 'Same meaning, different syntax',
    text: 'Passive voice rewrites the sentence, but the same chef cooks the same meal.',
    pair: PASSIVE,
    action: 'Score it',
    run: (state) => scoreStep(state, PASSIVE, true),
  },
  {
    title: 'Different meaning, same words',
    text: 'Now swap who likes whom. A reader sees a different claim.',
    pair: SWAP,
    action: 'Score it',
    run: (state) => scoreStep(state, SWAP, false),
  },
  {
    title: 'Why? Every word meets every word',
    text: 'With mean pooling the score is a sum over token pairs: each word piece of A against each of B, ' +
      'wherever it stands. Swapping the names moves rows and columns around; the sum hardly changes.',
    pair: SWAP,
    action: 'Show why',
    run: async (state, view) => {
      const r = await state.engine.call(REQ.EXPLAIN, SWAP);
      renderHeatMap(view.map, r.model, { title: 'The model’s token pairs', words: true });
      return {
        score: r.model.cosine,
        verdict: `The cells add up to the score. The syntax-blind baseline (averaged word vectors, no order at all) gives ${cos3(r.baseline.cosine)}.`,
        level: 'diff',
      };
    },
  },
  {
    title: 'Word salad',
    text: 'Shuffle the words of the passive sentence into nonsense and compare it with the original.',
    pair: { a: PASSIVE.b, b: '…' },
    action: 'Shuffle and score',
    run: async (state, view) => {
      const r = await state.engine.call(REQ.SHUFFLE_SCORES, { text: PASSIVE.b, seeds: STRIP_SEEDS });
      // The first shuffle that is not the sentence itself.
      const k = Math.max(0, r.texts.findIndex((t) => t !== PASSIVE.b));
      view.b.textContent = r.texts[k];
      const mean = r.cosines.reduce((s, c) => s + c, 0) / r.cosines.length;
      view.root.dataset.salad = r.texts[k];
      view.root.dataset.mean = String(mean);
      return {
        score: r.cosines[k],
        verdict: `${loudness(r.cosines[k])}, for nonsense. ${r.cosines.length} random word orders score ${cos3(mean)} on average.`,
        level: 'diff',
      };
    },
  },
  {
    title: 'The benchmark: syntax-blind',
    text: 'Ordinary similarity (STS-B) against the SR benchmark, where the words stay and the structure or relations change.',
    pair: null,
    action: 'Run the benchmark (quick split)',
    run: async (state, view) => {
      const result = await benchmarkResult(state, view);
      const r = result.report;
      const sts = r.stsb_test.spearman;
      const structure = r.results.structure.avg_spearman;
      const relation = r.results.relation.avg_spearman;
      view.bench.replaceChildren(
        figure('STS-B test', sts, 'ordinary similarity', 'same'),
        figure('SR structure', structure, 'same meaning, new syntax', 'diff'),
        figure('SR relation', relation, 'same words, new relations', 'diff'),
      );
      return {
        score: null,
        verdict: `Spearman ×100 on the ${r.split} split: ordinary similarity ${fmt2(sts)}, syntax ${fmt2(structure)}, relations ${fmt2(relation)}. ` +
          (sts - Math.max(structure, relation) >= 30 ? 'High on STS-B, low on SR: the model is syntax-blind.'
            : 'The gap between STS-B and SR is smaller than the paper’s models show.') +
          pairwiseSentence(r.pairwise) + trainedNote(state, view, r),
        level: 'diff',
      };
    },
  },
];

/** For a file made by `sr-bench train`: what it was trained on, and the model it started from as
 * this tab last ran it on the same split over every file (the compare table's row), so a class
 * sees what fine-tuning changed; or how to get that row. '' for a released model. */
/** @param {PageState} state */
function trainedNote(state, view, report) {
  const info = state.loaded && state.loaded.info;
  const recipe = info && trainingText(info);
  if (!recipe) return '';
  const base = baseModelName(info);
  view.root.dataset.trained = info.trained.data;
  const row = [...state.runs].reverse().find((x) => x.model === base && x.encoder === 'model' && x.split === report.split &&
    x.relation_avg !== null && x.stsb_test_spearman !== null);
  if (!row) return ` This file was ${recipe}. Run ${base} on the ${report.split} split too: the compare table then shows both.`;
  view.root.dataset.baseRun = String(row.id);
  return ` This file was ${recipe}. ${base} itself (${row.dtype}, run ${row.id} in the compare table): ` +
    `ordinary similarity ${fmt2(row.stsb_test_spearman)}, syntax ${fmt2(row.structure_avg)}, relations ${fmt2(row.relation_avg)}.`;
}

/** The pairwise accuracy in a class's words: of the SR rows whose two rewrites have clearly
 * different gold scores, how often the model found the one that keeps the meaning, per 100
 * (ties count half), beside a coin's 50. '' when the report has none. */
export function pairwiseSentence(pairwise) {
  const all = pairwise && pairwise.all;
  if (!all || all.accuracy === null || all.n === 0) return '';
  const per100 = Math.round(all.accuracy);
  return ` Shown an original and two rewrites, the model picked the one that keeps the meaning in ${per100} of 100 cases ` +
    `(${all.n} sentences); a coin picks 50.`;
}

/** The step a model that reads Czech gets, before the benchmark. */
const CZECH_STEP = {
  title: 'Word order in Czech',
  text: 'In Czech the endings carry the roles. “Petr miluje Marii.” and “Marii miluje Petr.” both say that Petr loves Marie; ' +
    '“Petra miluje Marie.” changes two endings, and now Marie loves Petr.',
  pair: { a: CZECH.a, b: `${CZECH.same} / ${CZECH.reversed}` },
  action: 'Score both',
  run: async (state, view) => {
    const same = await state.engine.call(REQ.SIMILARITY, { a: CZECH.a, b: CZECH.same });
    const reversed = await state.engine.call(REQ.SIMILARITY, { a: CZECH.a, b: CZECH.reversed });
    const r = await state.engine.call(REQ.EXPLAIN, { a: CZECH.a, b: CZECH.reversed });
    renderHeatMap(view.map, r.model, { title: 'The model’s token pairs: Petr miluje Marii / Petra miluje Marie', words: true });
    view.root.dataset.czechSame = String(same.cosine);
    view.root.dataset.czechReversed = String(reversed.cosine);
    const gap = same.cosine - reversed.cosine;
    return {
      score: reversed.cosine,
      verdict: `Same meaning, new order: ${cos3(same.cosine)}. Roles reversed by the endings: ${cos3(reversed.cosine)}` +
        (gap >= 0.05 ? ', clearly lower: the model reads the endings. ' : ', about as high: the model misses the endings. ') +
        `The syntax-blind baseline gives ${cos3(same.static_cosine)} and ${cos3(reversed.static_cosine)}: ` +
        'it sees the same word pieces in any order, so only the endings can move it.',
      level: gap >= 0.05 ? 'same' : 'diff',
    };
  },
};

/** The last step: the class answers the benchmark's questions itself (quiz.js), on the same
 * questions everywhere the quiz's link is opened. */
const QUIZ_STEP = {
  title: 'You against the model',
  text: `Now you are the annotators: ${QUIZ_QUESTIONS} questions from the benchmark, an original sentence and two rewrites each ` +
    '(for a model that reads Czech, two pairs of Czech sentences). Pick the one closer in meaning, then see how you did ' +
    'against the model, the syntax-blind baseline and a coin. Everyone who opens the quiz’s link gets the same questions.',
  pair: null,
  action: 'Start the quiz',
  run: async (state) => {
    close();
    await openQuiz(state);
    return { score: null, verdict: '', level: 'same' };
  },
};

/** The lesson's steps for the loaded model (the Czech one for a multilingual vocabulary). */
/** @param {PageState} state */
function stepsOf(state) {
  const multilingual = state.loaded && isMultilingual(state.loaded.info);
  return [...(multilingual ? [...STEPS.slice(0, -1), CZECH_STEP, STEPS[STEPS.length - 1]] : STEPS), QUIZ_STEP];
}

function figure(label, value, note, level) {
  return el('div', { class: `lesson-figure is-${level}` },
    el('span', { class: 'lesson-figure-label' }, label),
    el('data', { class: 'lesson-figure-value', value: String(value), data: { figure: label } }, fmt2(value)),
    el('span', { class: 'muted' }, note));
}

/** The loaded model's own run with the model encoder (reused if it exists), else a quick run now. */
/** @param {PageState} state */
async function benchmarkResult(state, view) {
  // Reused only when the last run was a whole one of this model: a run of some files (or
  // without STS-B test) has none of the step's three figures to show.
  const same = (res) => res && res.load === state.loaded && res.report.encoder === 'model' &&
    coversEveryFile(res.report) && res.report.stsb_test;
  if (same(state.result)) return state.result;
  const timer = setInterval(() => {
    if (state.run && state.run.total) view.status.textContent = `Running: ${state.run.done} of ${state.run.total} sentences…`;
  }, 250);
  try {
    await runBenchmark(state, wholeBenchmark('quick'));
  } finally {
    clearInterval(timer);
  }
  if (!same(state.result)) throw new Error($('run-msg').textContent || 'the benchmark did not finish');
  return state.result;
}

/** A model must be loaded (or loading): the lesson loads the picked one if none is. */
/** @param {PageState} state */
async function ensureModel(state, view) {
  if (!state.loaded && !state.loadingKey) loadModel(state, selectedEntry(state));
  while (!state.loaded) {
    if (!state.loadingKey) throw new Error('no model could be loaded: see the model panel');
    view.status.textContent = 'Loading the model…';
    await new Promise((resolve) => { setTimeout(resolve, 200); });
  }
}

function viewOf() {
  return {
    root: $('lesson'), status: $('lesson-status'), a: $('lesson-a'), b: $('lesson-b'),
    map: $('lesson-map'), bench: $('lesson-bench'),
  };
}

/** @param {PageState} state */
function show(state, index) {
  const steps = stepsOf(state);
  const step = steps[index];
  const view = viewOf();
  state.lessonStep = index;
  state.lessonSeq = (state.lessonSeq || 0) + 1; // an answer for a step left behind is dropped
  view.root.dataset.step = String(index + 1);
  view.root.dataset.state = 'idle';
  delete view.root.dataset.trained;
  delete view.root.dataset.baseRun;
  $('lesson-count').textContent = `Step ${index + 1} of ${steps.length}`;
  $('lesson-title').textContent = step.title;
  $('lesson-text').textContent = step.text;
  $('lesson-pair').hidden = !step.pair;
  if (step.pair) {
    view.a.textContent = step.pair.a;
    view.b.textContent = step.pair.b;
  }
  $('lesson-go').textContent = step.action;
  $('lesson-prev').disabled = index === 0;
  $('lesson-next').disabled = index === steps.length - 1;
  const score = $('lesson-score');
  score.textContent = '';
  delete score.dataset.value;
  setMessage($('lesson-verdict'), '');
  view.status.textContent = '';
  view.map.replaceChildren();
  view.bench.replaceChildren();
  $('lesson-go').focus();
}

/** @param {PageState} state */
async function go(state) {
  const index = state.lessonStep;
  const seq = state.lessonSeq;
  const view = viewOf();
  view.root.dataset.state = 'pending';
  $('lesson-go').disabled = true;
  try {
    await ensureModel(state, view);
    view.status.textContent = 'Working…';
    const found = await stepsOf(state)[index].run(state, view);
    if (seq !== state.lessonSeq) return;
    const score = $('lesson-score');
    if (found.score !== null) {
      score.textContent = cos3(found.score);
      score.dataset.value = String(found.score);
    }
    setMessage($('lesson-verdict'), found.verdict);
    $('lesson-verdict').dataset.tone = found.level;
    view.status.textContent = '';
    view.root.dataset.state = 'ready';
  } catch (err) {
    if (seq !== state.lessonSeq) return;
    view.root.dataset.state = 'error';
    view.status.textContent = '';
    setMessage($('lesson-verdict'), `Could not run this step: ${err.message}`, 'error');
  } finally {
    $('lesson-go').disabled = false;
  }
}

/** @param {PageState} state */
function open(state) {
  $('lesson').hidden = false;
  document.documentElement.classList.add('in-lesson');
  show(state, Math.min(state.lessonStep || 0, stepsOf(state).length - 1));
}

function close() {
  $('lesson').hidden = true;
  document.documentElement.classList.remove('in-lesson');
  $('lesson-open').focus();
}

/** @param {PageState} state */
function move(state, delta) {
  const next = state.lessonStep + delta;
  if (next >= 0 && next < stepsOf(state).length) show(state, next);
}

/** @param {PageState} state */
export function setupLesson(state) {
  state.lessonStep = 0;
  $('lesson-open').addEventListener('click', () => open(state));
  $('lesson-close').addEventListener('click', close);
  $('lesson-go').addEventListener('click', () => go(state));
  $('lesson-prev').addEventListener('click', () => move(state, -1));
  $('lesson-next').addEventListener('click', () => move(state, 1));
  document.addEventListener('keydown', (e) => {
    if ($('lesson').hidden || e.altKey || e.ctrlKey || e.metaKey) return;
    if (e.key === 'ArrowRight' || e.key === 'PageDown') move(state, 1);
    else if (e.key === 'ArrowLeft' || e.key === 'PageUp') move(state, -1);
    else if (e.key === 'Escape') close();
    else return;
    e.preventDefault();
  });
}
