// Charts (the results' scatter, the compare panel's bars, the layer probe's lines): a thin wrapper around Chart.js
// (vendor/chart.umd.min.js, served from our own origin, loaded by index.html as a classic
// deferred script that defines globalThis.Chart).

const INK = '#111111';
const GRID = 'rgba(0, 0, 0, 0.12)';
const POINT = 'rgba(11, 78, 162, 0.45)';
const POINT_BORDER = 'rgba(11, 78, 162, 0.9)';

function chartLib() {
  const Chart = globalThis.Chart;
  if (!Chart) throw new Error('The chart library (vendor/chart.umd.min.js) did not load.');
  return Chart;
}

/** Font sizes follow the page's root font size (projector mode makes it larger). */
function fontSize() {
  const px = parseFloat(getComputedStyle(document.documentElement).fontSize) || 16;
  return Math.round(px * 0.85);
}

/**
 * A cosine-vs-gold scatter plot.
 * @param {HTMLCanvasElement} canvas
 */
export function createScatter(canvas) {
  const Chart = chartLib();
  /** @type {Array<{x: number, y: number, line: number}>} */
  let points = [];
  const chart = new Chart(canvas, {
    type: 'scatter',
    data: {
      datasets: [{
        label: 'pairs',
        data: points,
        pointRadius: 3,
        pointHoverRadius: 6,
        backgroundColor: POINT,
        borderColor: POINT_BORDER,
        borderWidth: 0.5,
      }],
    },
    options: {
      animation: false,
      responsive: true,
      maintainAspectRatio: false,
      parsing: false,
      plugins: {
        legend: { display: false },
        title: { display: true, text: '', color: INK, font: { size: fontSize() + 2, weight: 'bold' } },
        tooltip: {
          callbacks: {
            label: (ctx) => {
              const p = ctx.raw;
              return `line ${p.line}: gold ${p.x}, cosine ${p.y.toFixed(3)}`;
            },
          },
        },
      },
      scales: {
        x: {
          type: 'linear', min: -0.25, max: 5.25,
          title: { display: true, text: 'gold score (annotators, 0–5)', color: INK },
          ticks: { color: INK, font: { size: fontSize() } },
          // Gold scores are the integers 0–5: one tick each.
          afterBuildTicks: (axis) => { axis.ticks = [0, 1, 2, 3, 4, 5].map((value) => ({ value })); },
          grid: { color: GRID },
        },
        y: {
          type: 'linear',
          title: { display: true, text: 'cosine similarity (model)', color: INK },
          ticks: { color: INK, font: { size: fontSize() } },
          grid: { color: GRID },
        },
      },
    },
  });

  return {
    /**
     * @param {Array<{x: number, y: number, line: number}>} data
     * @param {string} title
     */
    update(data, title) {
      points = data;
      chart.data.datasets[0].data = points;
      chart.options.plugins.title.text = title;
      const size = fontSize();
      chart.options.plugins.title.font.size = size + 2;
      for (const axis of ['x', 'y']) {
        chart.options.scales[axis].ticks.font = { size };
        chart.options.scales[axis].title.font = { size };
      }
      chart.update();
    },
    destroy() { chart.destroy(); },
  };
}

/**
 * A chart of labelled series over shared x labels with a "Spearman ×100" y axis: the compare
 * panel's bars and the layer probe's lines.
 * @param {HTMLCanvasElement} canvas
 * @param {'bar'|'line'} type
 * @param {object} x  the x scale's options (ticks' font is set here)
 * @param {(s: {label: string, color: string, data: Array<number|null>}) => object} dataset  a Chart.js dataset per series
 */
function createSeriesChart(canvas, type, x, dataset) {
  const Chart = chartLib();
  const chart = new Chart(canvas, {
    type,
    data: { labels: [], datasets: [] },
    options: {
      animation: false,
      responsive: true,
      maintainAspectRatio: false,
      plugins: {
        legend: { display: true, labels: { color: INK } },
        tooltip: { callbacks: { label: (ctx) => `${ctx.dataset.label}: ${Number(ctx.raw).toFixed(2)}` } },
      },
      scales: {
        x: { ...x, ticks: { color: INK, font: { size: fontSize() } } },
        y: {
          title: { display: true, text: 'Spearman ×100', color: INK },
          ticks: { color: INK, font: { size: fontSize() } },
          grid: { color: GRID },
        },
      },
    },
  });
  return {
    /**
     * @param {Array<string|number>} labels  the x values
     * @param {Array<{label: string, color: string, data: Array<number|null>}>} series
     */
    update(labels, series) {
      chart.data.labels = labels;
      chart.data.datasets = series.map(dataset);
      const size = fontSize();
      chart.options.scales.x.ticks.font = { size };
      chart.options.scales.y.ticks.font = { size };
      chart.update();
    },
    destroy() { chart.destroy(); },
  };
}

/**
 * Grouped bars: one group per run, one bar per score (the compare panel).
 * @param {HTMLCanvasElement} canvas
 */
export function createBars(canvas) {
  return createSeriesChart(canvas, 'bar', { grid: { display: false } },
    (s) => ({ label: s.label, data: s.data, backgroundColor: s.color }));
}

/**
 * Lines over the layers (the layer probe): x = layer 0..L, one line per score.
 * @param {HTMLCanvasElement} canvas
 */
export function createLines(canvas) {
  return createSeriesChart(canvas, 'line',
    { title: { display: true, text: 'layer (0 = embedding output)', color: INK }, grid: { color: GRID } },
    (s) => ({ label: s.label, data: s.data, borderColor: s.color, backgroundColor: s.color, pointRadius: 3, tension: 0 }));
}
