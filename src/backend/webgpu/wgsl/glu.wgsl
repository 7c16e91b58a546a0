// The gated feed-forward's middle: y[r, j] = act(x[r, j]) · x[r, inter + j], x [rows, 2·inter]
// (one matmul's output: the gate's columns first, as ModernBERT's fused `Wi` and nomic-bert's
// gate and up matrices stacked at upload; Qwen3's and Gemma 3's too), y [rows, inter]. act:
// exact-erf GELU (GeGLU), SiLU (SwiGLU) or GELU's tanh form (Gemma's), the last two from
// e^−|g| so that nothing overflows, as the CPU backend computes them.

// `struct Params` (binding 0) is prepended from Rust: `GluParams` in ../kernels/glu.rs, `Act` and
// common.wgsl (`gelu`).

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<Act>;
@group(0) @binding(2) var<storage, read_write> y: array<Act>;

@compute @workgroup_size(256, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x + gid.y * 65535u * 256u;
    if (i >= p.len) {
        return;
    }
    let r = i / p.inter;
    let j = i % p.inter;
    let g = f32(x[r * 2u * p.inter + j]);
    let u = f32(x[r * 2u * p.inter + p.inter + j]);
    var a: f32;
    if (p.act == 0u) {
        a = gelu(g);
    } else if (p.act == 1u) {
        let e = exp(-abs(g));
        a = g * select(e, 1.0, g >= 0.0) / (1.0 + e);
    } else {
        // tanh(t) = sign(t) · (1 − e^−2|t|) / (1 + e^−2|t|), t = √(2/π) · (g + 0.044715 g³).
        let t = 0.7978846 * (g + 0.044715 * g * g * g);
        let e = exp(-2.0 * abs(t));
        a = 0.5 * g * (1.0 + sign(t) * (1.0 - e) / (1.0 + e));
    }
    y[i] = Act(a * u);
}
