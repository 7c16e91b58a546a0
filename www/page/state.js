// @ts-check
// The page's state: one object, made by main.js and handed to every panel; plus the two
// lookups on it that several panels need.

import { $ } from './ui.js';

/** The page's state: what createState makes. @typedef {ReturnType<typeof createState>} PageState */

/** The site root (this file is page/state.js). */
export const BASE_URL = new URL('../', import.meta.url).href;

/** A model file from this computer, as loaded: the File, its sha256 and the truncation asked for.
 * @typedef {{file: File, sha256: string, max_seq_length?: number}} LocalChoice */

export function createState() {
  return {
    /** The engine worker's client (protocol.js, rpc.js); replaced when the engine restarts.
     * @type {import('./engine.js').EngineClient|null} */
    engine: null,
    /** @type {import('../shared/protocol.js').ModelEntry[]} */
    manifest: [],
    /** The backend chosen on the page (and in the URL). @type {'cpu'|'webgpu'|'auto'} */
    backend: 'cpu',
    /** The loaded model (the `load` answer), with `local`: the file from this computer it was
     * read from (model-panel.js loadModel), null for a site model; `filePrefix`: the text prefix
     * the file says (`info.prefix` is the one in use, prefix.js).
     * @type {(import('../shared/protocol.js').LoadResult & {local: LocalChoice|null, filePrefix: string})|null} */
    loaded: null,
    loadingKey: null,
    userEngaged: false,
    /** A user's own pairs file for the next run (own-pairs.js), scored alone. @type {File|null} */
    ownPairs: null,
    /** The run under way: its request id (the probes' after the benchmark), helpers replaced so far,
     * the probe running (if one is). @type {{id: number, split: string, encoder: string, done: number, total: number,
     *   phase: string, replaced: number, probe?: string}|null} */
    run: null,
    /** The last finished run. @type {{report: any, pairs_csv: string, timings: any, load: any, backend_status: any,
     *   czech_baseline?: any, finished_at: string}|null} */
    result: null,
    playSeq: 0,
    playTimer: 0,
    urlTimer: 0,
    /** The results' scatter plot (charts.js), made on first use. */
    scatter: null,
    /** The model file picked on this computer (local-model.js): the File and its inspection.
     * @type {{file: File, inspected: any, sha256: string|null}|null} */
    localFile: null,
    /** Every finished run in this tab, oldest first (compare.js). */
    runs: [],
    /** The Results view's results.json (measured.js): the project's rows and the paper's.
     * @type {{rows: any[], paper: Record<string, any>}|null} */
    measured: null,
    /** The compare panel's sort (column key, descending?) and bar chart. */
    compareSort: { key: 'relation_avg', descending: true },
    compareChart: null,
    // The playground's explainers (explain.js, word-order.js, layers-chart.js):
    /** The last `explain` answer (protocol.js ExplainResult), redrawn when the word toggle flips. */
    explained: null,
    /** The seed that made B from A ("Shuffle words", `shuffle=` in the link); null when B is not a shuffle. */
    shuffleSeed: null,
    /** "Swap two words": the position of the first word clicked, or null. */
    swapPick: null,
    /** The A the "Shuffle 20×" strip was made for (null: no strip). */
    stripFor: null,
    /** The playground's layer-by-layer line chart (charts.js), made on first use. */
    layersChart: null,
    /** The last run's finished probes (kind → {result, timings, split, seeds, load}, probes.js). */
    probes: {},
    /** The layer probe's line chart (Spearman per layer), made on first use. */
    probeLayersChart: null,
    /** The open quiz (quiz.js): its seed, set and size, the drawn questions, the visitor's
     * answers, the current question, the encoders' answers once finished; null when closed.
     * @type {{seed: number, set: 'sr'|'czech', questions: number, drawn: any, answers: number[], at: number,
     *   scored: import('../shared/protocol.js').QuizResult|null}|null} */
    quiz: null,
    /** Whether this page is served with the class API (`sr-bench serve --class`; class.js);
     * null until the first quiz asks. @type {boolean|null} */
    classServer: null,
    /** The class the open quiz belongs to (class.js): its code, the teacher's token (the
     * teacher's page only), the figures' poll, the model's answers for the teacher's view.
     * @type {{code: string, token: string|null, timer: any, model: import('../shared/protocol.js').QuizResult|null}|null} */
    klass: null,
  };
}

/** A vocabulary this large is a multilingual one (XLM-R's 250,002 pieces, multilingual BERT's
 * 119,547; English WordPiece models have ~30,000): the lesson's Czech step, the Czech quiz. */
const MULTILINGUAL_VOCABULARY = 100_000;

/** Whether a loaded model reads many languages (by its vocabulary's size). */
export const isMultilingual = (info) => info.vocab_size >= MULTILINGUAL_VOCABULARY;

/** A manifest entry's key; a local file's (`entry.local`, see local-model.js) is its sha256. */
export const modelKey = (e) => (e.local ? `local:${e.sha256}` : `${e.name}@${e.dtype}`);

/** The manifest entry chosen in the model picker, or null. */
/** @param {PageState} state */
export function selectedEntry(state) {
  const key = $('model-select').value;
  return state.manifest.find((e) => modelKey(e) === key) || null;
}
