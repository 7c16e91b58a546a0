// Rotary positions (the "rotate half" form, as the CPU backend's `blocks::Rope`), in place on
// the queries and keys of a fused QKV buffer [rows, q (hidden) | k (hidden) | v (hidden)]:
// per head, dimension c of the first half turns with c + half by the angle of the token's
// position (row mod seq). The angles' cosines and sines come from the CPU ([seq, half] each,
// the same f32 values the CPU backend uses), so both backends turn by the same amounts.

// `struct Params` (binding 0) is prepended from Rust: `RopeParams` in ../kernels/rope.rs, and
// `Act`.

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> qkv: array<Act>;
@group(0) @binding(2) var<storage, read> cos_table: array<f32>;
@group(0) @binding(3) var<storage, read> sin_table: array<f32>;

@compute @workgroup_size(256, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x + gid.y * 65535u * 256u;
    if (i >= p.len) {
        return;
    }
    let c = i % p.half;
    let t = i / p.half;
    let head = t % (2u * p.heads); // q heads, then k heads
    let row = t / (2u * p.heads);
    let hidden = p.heads * 2u * p.half;
    let base = row * 3u * hidden + head * 2u * p.half;
    let at = (row % p.seq) * p.half + c;
    let co = cos_table[at];
    let si = sin_table[at];
    let a = f32(qkv[base + c]);
    let b = f32(qkv[base + c + p.half]);
    qkv[base + c] = Act(a * co - b * si);
    qkv[base + c + p.half] = Act(b * co + a * si);
}
