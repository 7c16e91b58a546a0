// The sum of `v` over the workgroup's WG threads (every thread gets it): a tree in workgroup
// memory. Appended to kernels that define `const WG` (layernorm.wgsl, pooling.wgsl) when the
// device has no subgroups; reduce_subgroup.wgsl is the same function with them.

var<workgroup> red: array<f32, WG>;

fn reduce_sum(lid: u32, v: f32) -> f32 {
    red[lid] = v;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if (lid < s) {
            red[lid] += red[lid + s];
        }
        workgroupBarrier();
    }
    let total = red[0];
    workgroupBarrier();
    return total;
}
