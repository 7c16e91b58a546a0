// q8_0: per block an f16 scale d, then 32 signed bytes q; w = d · q.

const BLOCK_BYTES: u32 = 34u;

// w[n, k..k+4] (k a multiple of 4, so the four share a block): one scale, one or two words.
fn load_weight4(n: u32, k: u32) -> vec4<f32> {
    let block = (n * (p.k / 32u) + k / 32u) * BLOCK_BYTES;
    let q = weight_word(block + 2u + k % 32u);
    // Each byte sign-extended.
    let v = vec4<i32>(bitcast<i32>(q << 24u), bitcast<i32>(q << 16u), bitcast<i32>(q << 8u),
        bitcast<i32>(q)) >> vec4<u32>(24u);
    return block_scale(block) * vec4<f32>(v);
}
