// The page's elements that are more than an HTMLElement, by id (index.html), for the type
// checker (tsconfig.json): `$(id)` (page/ui.js) has this type for these ids, HTMLElement for the
// rest. No code. An element added to index.html as a form control, button, progress bar or
// canvas that the scripts use as one gets its line here (tsc says so: "Property 'value' does
// not exist on type 'HTMLElement'").
interface PageElements {
  'stsb-test-value': HTMLDataElement;
  'pairwise-value': HTMLDataElement;
  'lesson-open': HTMLButtonElement;
  'projector': HTMLButtonElement;
  'lesson-close': HTMLButtonElement;
  'lesson-go': HTMLButtonElement;
  'lesson-score': HTMLOutputElement;
  'lesson-prev': HTMLButtonElement;
  'lesson-next': HTMLButtonElement;
  'quiz-open': HTMLButtonElement;
  'quiz-close': HTMLButtonElement;
  'quiz-new': HTMLButtonElement;
  'quiz-again': HTMLButtonElement;
  'quiz-back': HTMLButtonElement;
  'quiz-option-0': HTMLButtonElement;
  'quiz-option-1': HTMLButtonElement;
  'quiz-link': HTMLAnchorElement;
  'class-start': HTMLButtonElement;
  'class-csv': HTMLButtonElement;
  'class-delete': HTMLButtonElement;
  'class-link': HTMLAnchorElement;
  'model-select': HTMLSelectElement;
  'model-load': HTMLButtonElement;
  'model-progress': HTMLProgressElement;
  'local-file': HTMLInputElement;
  'local-max-seq': HTMLInputElement;
  'model-prefix': HTMLInputElement;
  'bench-czech': HTMLInputElement;
  'own-pairs-file': HTMLInputElement;
  'url-model': HTMLInputElement;
  'url-sha256': HTMLInputElement;
  'url-fetch': HTMLButtonElement;
  'own-pairs-clear': HTMLButtonElement;
  'prefix-apply': HTMLButtonElement;
  'prefix-reset': HTMLButtonElement;
  'local-load': HTMLButtonElement;
  'local-keep': HTMLInputElement;
  'kept-use': HTMLButtonElement;
  'kept-forget': HTMLButtonElement;
  'text-a': HTMLTextAreaElement;
  'text-b': HTMLTextAreaElement;
  'score-model': HTMLOutputElement;
  'score-static': HTMLOutputElement;
  'shuffle-b': HTMLButtonElement;
  'reverse-b': HTMLButtonElement;
  'swap-b': HTMLButtonElement;
  'shuffle-20': HTMLButtonElement;
  'shuffle-seed-value': HTMLOutputElement;
  'copy-link': HTMLButtonElement;
  'share-url': HTMLInputElement;
  'explain-words': HTMLInputElement;
  'layers-chart': HTMLCanvasElement;
  'encoder': HTMLSelectElement;
  'probe-shuffle': HTMLInputElement;
  'probe-seeds': HTMLInputElement;
  'probe-layers': HTMLInputElement;
  'run': HTMLButtonElement;
  'cancel': HTMLButtonElement;
  'run-progress': HTMLProgressElement;
  'show-extra': HTMLInputElement;
  'export-json': HTMLButtonElement;
  'export-csv': HTMLButtonElement;
  'plot-file': HTMLSelectElement;
  'plot-dim': HTMLSelectElement;
  'scatter': HTMLCanvasElement;
  'shuffle-json': HTMLButtonElement;
  'probe-layers-chart': HTMLCanvasElement;
  'layers-json': HTMLButtonElement;
  'compare-csv': HTMLButtonElement;
  'compare-chart': HTMLCanvasElement;
}
