// @ts-check
// Charts (the results' scatter, the compare panel's bars): a thin wrapper around Chart.js
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

/** A chart of labelled series (bars, lines) with a legend; the tooltip shows `digits` decimals. */
function seriesChart(canvas, type, digits, scales) {
  const Chart = chartLib();
  return new Chart(canvas, {
    type,
    data: { labels: [], datasets: [] },
    options: {
      animation: false,
      responsive: true,
      maintainAspectRatio: false,
      plugins: {
        legend: { display: true, labels: { color: INK } },
        tooltip: { callbacks: { label: (ctx) => `${ctx.dataset.label}: ${Number(ctx.raw).toFixed(digits)}` } },
      },
      scales,
    },
  });
}

/**
 * Grouped bars: one group per run, one bar per score (the compare panel).
 * @param {HTMLCanvasElement} canvas
 */
export function createBars(canvas) {
  const chart = seriesChart(canvas, 'bar', 2, {
    x: { ticks: { color: INK, font: { size: fontSize() } }, grid: { display: false } },
    y: {
      title: { display: true, text: 'Spearman ×100', color: INK },
      ticks: { color: INK, font: { size: fontSize() } },
      grid: { color: GRID },
    },
  });
  return {
    /**
     * @param {string[]} labels  one per run
     * @param {Array<{label: string, color: string, data: Array<number|null>}>} series
     */
    update(labels, series) {
      chart.data.labels = labels;
      chart.data.datasets = series.map((s) => ({ label: s.label, data: s.data, backgroundColor: s.color }));
      const size = fontSize();
      chart.options.scales.x.ticks.font = { size };
      chart.options.scales.y.ticks.font = { size };
      chart.update();
    },
    destroy() { chart.destroy(); },
  };
}

/**
 * Lines over the model's layers, x = layer 0…L: the playground's per-pair cosines (the default
 * axis) and the layer probe's Spearman per layer.
 * @param {HTMLCanvasElement} canvas
 * @param {{yTitle?: string, digits?: number}} [axis]  the y axis' title and the tooltip's decimals
 */
export function createLines(canvas, { yTitle = 'cosine similarity', digits = 4 } = {}) {
  const chart = seriesChart(canvas, 'line', digits, {
    x: { title: { display: true, text: 'layer (0 = embedding output)', color: INK }, ticks: { color: INK }, grid: { color: GRID } },
    y: { title: { display: true, text: yTitle, color: INK }, ticks: { color: INK }, grid: { color: GRID } },
  });
  return {
    /**
     * @param {string[]} labels  one per x position
     * @param {Array<{label: string, color: string, data: number[], dashed?: boolean}>} series
     */
    update(labels, series) {
      chart.data.labels = labels;
      chart.data.datasets = series.map((s) => ({
        label: s.label, data: s.data, borderColor: s.color, backgroundColor: s.color,
        borderDash: s.dashed ? [6, 4] : [], pointRadius: s.dashed ? 0 : 3, tension: 0,
      }));
      const size = fontSize();
      for (const axis of ['x', 'y']) {
        chart.options.scales[axis].ticks.font = { size };
        chart.options.scales[axis].title.font = { size };
      }
      chart.update();
    },
    destroy() { chart.destroy(); },
  };
}
