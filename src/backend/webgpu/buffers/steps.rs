//! Recorded dispatches: a [`Step`] per kernel launch, their parameter blocks, and one compute
//! pass per batch.

use crate::backend::webgpu::kernels::{Kernels, Op, Shape};

/// One dispatch of a recorded graph: the kernel launch, its bindings (the parameter block at
/// `params_offset` of the graph's uniform buffer, then the buffers the op names).
pub(crate) struct Step {
    pub op: Op,
    pub bind_group: wgpu::BindGroup,
    pub params_offset: u64,
}

impl Step {
    /// Binds `params` (its slot at `params_offset`, sized for `op`'s block) and `buffers` at
    /// bindings 0, 1, 2, … of `op`'s pipeline.
    pub fn new(
        device: &wgpu::Device,
        kernels: &Kernels,
        op: Op,
        (params, params_offset): (&wgpu::Buffer, u64),
        buffers: &[&wgpu::Buffer],
    ) -> Self {
        let size = op.params(Shape::rows(0)).as_bytes().len() as u64;
        let mut entries = vec![wgpu::BindGroupEntry {
            binding: 0,
            resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                buffer: params,
                offset: params_offset,
                size: wgpu::BufferSize::new(size),
            }),
        }];
        entries.extend(
            buffers
                .iter()
                .enumerate()
                .map(|(i, b)| wgpu::BindGroupEntry {
                    binding: i as u32 + 1,
                    resource: b.as_entire_binding(),
                }),
        );
        let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &kernels.pipeline(&op).get_bind_group_layout(0),
            entries: &entries,
        });
        Self {
            op,
            bind_group,
            params_offset,
        }
    }

    /// Records this dispatch for a batch of `shape` into `pass`.
    pub fn dispatch(&self, pass: &mut wgpu::ComputePass<'_>, kernels: &Kernels, shape: Shape) {
        let (x, y, z) = self.op.workgroups(shape);
        pass.set_pipeline(kernels.pipeline(&self.op));
        pass.set_bind_group(0, &self.bind_group, &[]);
        pass.dispatch_workgroups(x, y, z);
    }
}

/// The parameter blocks of `steps` for a batch of `shape`, each at its offset: the contents
/// of the graph's uniform buffer (`len` bytes).
pub(crate) fn params_bytes(steps: &[Step], shape: Shape, len: u64) -> Vec<u8> {
    let mut bytes = vec![0u8; len as usize];
    for s in steps {
        let params = s.op.params(shape);
        let block = params.as_bytes();
        let at = s.params_offset as usize;
        bytes[at..at + block.len()].copy_from_slice(block);
    }
    bytes
}

/// Records `steps` for a batch of `shape` into one compute pass.
pub(crate) fn record(
    encoder: &mut wgpu::CommandEncoder,
    kernels: &Kernels,
    steps: &[Step],
    shape: Shape,
) {
    let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
        label: Some("sr-bench"),
        timestamp_writes: None,
    });
    for s in steps {
        s.dispatch(&mut pass, kernels, shape);
    }
}
