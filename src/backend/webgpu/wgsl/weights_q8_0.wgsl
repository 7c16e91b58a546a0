// q8_0: per block an f16 scale d, then 32 signed bytes q; w = d · q.

const BLOCK_BYTES: u32 = 34u;

fn load_weight(n: u32, k: u32) -> f32 {
    let block = (n * (p.k / 32u) + k / 32u) * BLOCK_BYTES;
    // Sign-extend the byte.
    let q = bitcast<i32>(weight_byte(block + 2u + k % 32u) << 24u) >> 24u;
    return block_scale(block) * f32(q);
}
