// GGML blocks of 32 weights along k, exactly the file's bytes (row-major [n, k/32] blocks),
// read as little-endian u32 words. Each block starts with its f16 scale; blocks are 34 (q8_0)
// or 18 (q4_0) bytes, so a block, hence its scale, always starts on an even byte: the scale is
// the low or the high half of one word.

alias WeightWord = u32;

fn block_scale(offset: u32) -> f32 {
    let halves = unpack2x16float(w[offset >> 2u]);
    return select(halves.x, halves.y, (offset & 2u) != 0u);
}

// The 4 bytes at `offset` (any alignment) as one word, the first in the low byte: one word
// when aligned, else the two it straddles.
fn weight_word(offset: u32) -> u32 {
    let shift = (offset & 3u) * 8u;
    let low = w[offset >> 2u] >> shift;
    if (shift == 0u) {
        return low;
    }
    return low | (w[(offset >> 2u) + 1u] << (32u - shift));
}
