// Weights of the tiled matmul (matmul.wgsl) stored as f32, row-major [n, k].

alias WeightWord = f32;

// w[n, k..k+4], zero past k's end.
fn load_weight4(n: u32, k: u32) -> vec4<f32> {
    let base = n * p.k + k;
    if (k + 4u <= p.k) {
        return vec4<f32>(w[base], w[base + 1u], w[base + 2u], w[base + 3u]);
    }
    var v = vec4<f32>(0.0);
    for (var j = 0u; j < 4u; j++) {
        if (k + j < p.k) {
            v[j] = w[base + j];
        }
    }
    return v;
}
