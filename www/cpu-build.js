// Which CPU build of the engine runs (issue 15). build.sh makes two wasm builds of the same Rust
// code: www/pkg (simd128, every browser with WebAssembly SIMD) and www/pkg-relaxed (simd128 +
// relaxed SIMD, whose int8 dot products do twice the multiply-adds per instruction). Both export
// the same API, so one JS glue (pkg/sr_bench.js) runs either; assemble.sh checks the two glues
// are identical and copies only the relaxed build's .wasm.
//
// The PAGE chooses (app/main.js) and tells the engine worker (request `cpu-build`, protocol.js),
// which compiles that .wasm and hands the compiled module to its helpers: one choice per page,
// made where a test can replace WebAssembly.validate (init scripts do not run in workers).
// `?cpu=simd128` in the page's URL forces the plain build (tests, comparing the two).

/** The two builds: the value `cpu_build()` (Rust) returns, what the page calls it, its .wasm. */
export const CPU_BUILDS = Object.freeze({
  'relaxed-simd': Object.freeze({ label: 'relaxed SIMD', wasm: 'pkg-relaxed/sr_bench_bg.wasm' }),
  simd128: Object.freeze({ label: 'WebAssembly SIMD', wasm: 'pkg/sr_bench_bg.wasm' }),
});

/**
 * The smallest module using a relaxed SIMD instruction:
 * (func (param v128 v128 v128) (result v128)
 *   local.get 0 local.get 1 local.get 2 i32x4.relaxed_dot_i8x16_i7x16_add_s)
 * — the instruction the relaxed kernels are built on (opcode 0xfd 0x113).
 */
const RELAXED_PROBE = Uint8Array.of(
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, //             "\0asm", version 1
  0x01, 0x08, 0x01, 0x60, 0x03, 0x7b, 0x7b, 0x7b, 0x01, 0x7b, // types: (v128 v128 v128) -> v128
  0x03, 0x02, 0x01, 0x00, //                                     one function of type 0
  0x0a, 0x0d, 0x01, 0x0b, 0x00, //                               code: one body, 11 bytes, no locals
  0x20, 0x00, 0x20, 0x01, 0x20, 0x02, //                         local.get 0, 1, 2
  0xfd, 0x93, 0x02, //                                           i32x4.relaxed_dot_i8x16_i7x16_add_s
  0x0b, //                                                       end
);

/** Whether this browser's WebAssembly has relaxed SIMD. */
export function relaxedSimdSupported() {
  return typeof WebAssembly === 'object' && WebAssembly.validate(RELAXED_PROBE);
}

/**
 * The build to run: relaxed SIMD where the browser has it, else simd128. `forced` (the URL's
 * `cpu=`) may ask for either; a build the browser cannot run, or an unknown name, is not used
 * and `warning` says why. @returns {{build: keyof CPU_BUILDS, warning: string|null}}
 */
export function chooseCpuBuild(forced = null) {
  const relaxed = relaxedSimdSupported();
  const auto = relaxed ? 'relaxed-simd' : 'simd128';
  if (!forced) return { build: auto, warning: null };
  if (!Object.hasOwn(CPU_BUILDS, forced)) {
    return { build: auto, warning: `Unknown CPU build “${forced}” (use ${Object.keys(CPU_BUILDS).join(' or ')}): using ${CPU_BUILDS[auto].label}.` };
  }
  if (forced === 'relaxed-simd' && !relaxed) {
    return { build: auto, warning: 'This browser has no relaxed SIMD: using WebAssembly SIMD.' };
  }
  return { build: forced, warning: null };
}

/** The URL of a build's .wasm (relative to the site's root, where this file is). */
export function cpuBuildWasmUrl(build) {
  if (!Object.hasOwn(CPU_BUILDS, build)) throw new Error(`unknown CPU build ${build}`);
  return new URL(CPU_BUILDS[build].wasm, import.meta.url);
}

/** What the page calls a build ("relaxed SIMD" / "WebAssembly SIMD"). */
export function cpuBuildLabel(build) {
  return Object.hasOwn(CPU_BUILDS, build) ? CPU_BUILDS[build].label : String(build);
}
