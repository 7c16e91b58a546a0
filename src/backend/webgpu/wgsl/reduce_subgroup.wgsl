// reduce.wgsl's `reduce_sum` with subgroup operations (the `subgroups` feature): each
// subgroup adds its lanes in registers, one lane per subgroup writes that partial, and every
// thread adds the partials — two barriers instead of log2(WG) + 2. Must be called in
// workgroup-uniform control flow, with every thread of the workgroup (as reduce.wgsl).

var<workgroup> red: array<f32, WG>;

fn reduce_sum(lid: u32, v: f32) -> f32 {
    let partial = subgroupAdd(v);
    red[lid] = 0.0;
    workgroupBarrier();
    // One writer per subgroup: its first active lane (naga has no subgroupElect).
    if (subgroupBroadcastFirst(lid) == lid) {
        red[lid] = partial;
    }
    workgroupBarrier();
    var total = 0.0;
    for (var i = 0u; i < WG; i++) {
        total += red[i];
    }
    workgroupBarrier();
    return total;
}
