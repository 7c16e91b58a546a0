// q4_0: per block an f16 scale d, then 16 bytes; byte j holds weight j in its low nibble and
// weight j + 16 in its high nibble, each stored + 8: w = d · (nibble − 8).

const BLOCK_BYTES: u32 = 18u;

// w[n, k..k+4] (k a multiple of 4, so the four share a block and a nibble half): one scale,
// one or two words.
fn load_weight4(n: u32, k: u32) -> vec4<f32> {
    let block = (n * (p.k / 32u) + k / 32u) * BLOCK_BYTES;
    let j = k % 32u;
    let nibbles = (weight_word(block + 2u + j % 16u) >> ((j / 16u) * 4u)) & 0x0f0f0f0fu;
    let v = vec4<i32>(vec4<u32>(nibbles, nibbles >> 8u, nibbles >> 16u, nibbles >> 24u)
        & vec4<u32>(0xffu)) - vec4<i32>(8);
    return block_scale(block) * vec4<f32>(v);
}
