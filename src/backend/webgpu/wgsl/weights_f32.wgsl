// Weights of the tiled matmul (matmul.wgsl) stored as f32, row-major [n, k].

alias WeightWord = f32;

fn load_weight(n: u32, k: u32) -> f32 {
    return w[n * p.k + k];
}
