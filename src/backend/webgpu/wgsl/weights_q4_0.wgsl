// q4_0: per block an f16 scale d, then 16 bytes; byte j holds weight j in its low nibble and
// weight j + 16 in its high nibble, each stored + 8: w = d · (nibble − 8).

const BLOCK_BYTES: u32 = 18u;

fn load_weight(n: u32, k: u32) -> f32 {
    let block = (n * (p.k / 32u) + k / 32u) * BLOCK_BYTES;
    let j = k % 32u;
    let nibble = (weight_byte(block + 2u + j % 16u) >> ((j / 16u) * 4u)) & 0xfu;
    return block_scale(block) * f32(i32(nibble) - 8);
}
