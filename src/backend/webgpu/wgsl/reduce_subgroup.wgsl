// reduce.wgsl's `reduce_sum` and `reduce_max` with subgroup operations (the `subgroups`
// feature): each subgroup combines its lanes in registers, one lane per subgroup writes that
// partial, and every thread combines the partials — two barriers instead of log2(WG) + 2. Must
// be called in workgroup-uniform control flow, with every thread of the workgroup (as
// reduce.wgsl).

var<workgroup> red: array<f32, WG>;

// `partial`: this subgroup's result; `identity`: 0 for a sum, the lowest value for a max.
fn combine_subgroups(lid: u32, partial: f32, identity: f32, is_max: bool) -> f32 {
    red[lid] = identity;
    workgroupBarrier();
    // One writer per subgroup: its first active lane (naga has no subgroupElect).
    if (subgroupBroadcastFirst(lid) == lid) {
        red[lid] = partial;
    }
    workgroupBarrier();
    var total = identity;
    for (var i = 0u; i < WG; i++) {
        if (is_max) {
            total = max(total, red[i]);
        } else {
            total += red[i];
        }
    }
    workgroupBarrier();
    return total;
}

fn reduce_sum(lid: u32, v: f32) -> f32 {
    return combine_subgroups(lid, subgroupAdd(v), 0.0, false);
}

fn reduce_max(lid: u32, v: f32) -> f32 {
    return combine_subgroups(lid, subgroupMax(v), -3.0e38, true);
}
