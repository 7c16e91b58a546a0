// Globals the page's scripts get from outside the module graph, for the type checker
// (tsconfig.json); no code. Chart.js is vendored as a classic script (vendor/chart.umd.min.js,
// loaded by index.html before the modules), which defines `Chart` on the page's global.

/** The part of Chart.js's API page/charts.js uses (its types are not vendored). */
interface ChartInstance {
  data: { labels?: unknown[]; datasets: Array<Record<string, any>> };
  options: Record<string, any>;
  update(mode?: string): void;
  destroy(): void;
}
interface ChartConstructor {
  new (canvas: HTMLCanvasElement | CanvasRenderingContext2D, config: Record<string, any>): ChartInstance;
}

declare var Chart: ChartConstructor | undefined;

/** Chromium's device memory figure, GB (shared/pool-size.js). */
interface Navigator { readonly deviceMemory?: number }
interface WorkerNavigator { readonly deviceMemory?: number }

/** The wasm memory diagnostic every worker sets (engine/pool.js exposeWasmMemory). */
declare var srBenchWasmBytes: (() => number) | undefined;
