// The sum and the max of `v` over the workgroup's WG threads (every thread gets the result): a
// tree in workgroup memory. Appended to kernels that define `const WG` (layernorm.wgsl,
// pooling.wgsl, attention.wgsl) when the device has no subgroups; reduce_subgroup.wgsl is the
// same functions with them. Call in workgroup-uniform control flow, with every thread.

var<workgroup> red: array<f32, WG>;

fn reduce_tree(lid: u32, v: f32, is_max: bool) -> f32 {
    red[lid] = v;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if (lid < s) {
            if (is_max) {
                red[lid] = max(red[lid], red[lid + s]);
            } else {
                red[lid] += red[lid + s];
            }
        }
        workgroupBarrier();
    }
    let total = red[0];
    workgroupBarrier();
    return total;
}

fn reduce_sum(lid: u32, v: f32) -> f32 {
    return reduce_tree(lid, v, false);
}

fn reduce_max(lid: u32, v: f32) -> f32 {
    return reduce_tree(lid, v, true);
}
