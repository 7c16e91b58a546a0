//! The WGSL kernels (built from the `.wgsl` files next to this one, each after its `Params`
//! struct generated in `params.rs`), their pipelines, and [`Op`]: one kernel launch described
//! by what stays fixed for a model (widths, flags); given a batch's [`Shape`], it yields the
//! kernel's parameter block and workgroup grid. The encoder and the one-shot kernel runs
//! (`runners.rs`) launch kernels only through it.

use anyhow::{bail, Result};

use super::params::{
    AttentionParams, ElementwiseParams, LayerNormParams, MatmulParams, PoolingParams, UniformParams,
};

const COMMON: &str = include_str!("wgsl/common.wgsl");
const MATMUL: &str = include_str!("wgsl/matmul.wgsl");
const LAYERNORM: &str = include_str!("wgsl/layernorm.wgsl");
const ATTENTION: &str = include_str!("wgsl/attention.wgsl");
const POOLING: &str = include_str!("wgsl/pooling.wgsl");
const ELEMENTWISE: &str = include_str!("wgsl/elementwise.wgsl");
const REDUCE: &str = include_str!("wgsl/reduce.wgsl");
const REDUCE_SUBGROUP: &str = include_str!("wgsl/reduce_subgroup.wgsl");
/// The directive a module using subgroup operations starts with: the browser's WGSL requires
/// it; naga (natively) gates them by the device feature instead and rejects the directive.
const ENABLE_SUBGROUPS: &str = if cfg!(target_arch = "wasm32") {
    "enable subgroups;\n"
} else {
    ""
};

/// Output tile of the matmul kernel (rows and columns per workgroup).
const MATMUL_TILE: u32 = 64;
/// Threads per workgroup of the attention kernel; `head_dim` must divide it.
const ATTENTION_THREADS: usize = 64;
/// Longest sequence the attention kernel holds in workgroup memory.
const ATTENTION_MAX_SEQ: usize = 512;
/// Threads per workgroup of the element-wise kernels.
const ELEMENTWISE_THREADS: u32 = 256;

/// The compiled compute pipelines (one per kernel entry point).
pub(crate) struct Kernels {
    matmul: wgpu::ComputePipeline,
    layer_norm: wgpu::ComputePipeline,
    attention: wgpu::ComputePipeline,
    pooling: wgpu::ComputePipeline,
    embed_add: wgpu::ComputePipeline,
    gelu: wgpu::ComputePipeline,
}

impl Kernels {
    /// Compiles the kernels; `subgroups`: the device has the `subgroups` feature, and the
    /// reductions (LayerNorm, pooling) use it.
    pub fn new(device: &wgpu::Device, subgroups: bool) -> Self {
        let module = |label: &str, parts: &[&str]| {
            device.create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some(label),
                source: wgpu::ShaderSource::Wgsl(parts.concat().into()),
            })
        };
        let pipeline = |label: &str, module: &wgpu::ShaderModule, entry: &str| {
            device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(label),
                layout: None,
                module,
                entry_point: Some(entry),
                compilation_options: Default::default(),
                cache: None,
            })
        };
        let [matmul, layer_norm, attention, pooling, elementwise] =
            sources(subgroups).map(|(label, parts)| module(label, &parts));
        Self {
            matmul: pipeline("matmul", &matmul, "main"),
            layer_norm: pipeline("layer_norm", &layer_norm, "main"),
            attention: pipeline("attention", &attention, "main"),
            pooling: pipeline("pooling", &pooling, "main"),
            embed_add: pipeline("embed_add", &elementwise, "embed_add"),
            gelu: pipeline("gelu", &elementwise, "gelu_inplace"),
        }
    }

    /// The pipeline that runs `op`.
    pub fn pipeline(&self, op: &Op) -> &wgpu::ComputePipeline {
        match op {
            Op::Matmul { .. } => &self.matmul,
            Op::LayerNorm { .. } => &self.layer_norm,
            Op::Attention { .. } => &self.attention,
            Op::MeanPoolL2 { .. } => &self.pooling,
            Op::EmbedAdd { .. } => &self.embed_add,
            Op::Gelu => &self.gelu,
        }
    }
}

/// Each shader module's label and source parts: its parameter struct, then the WGSL files
/// (the reductions' `reduce_sum` with or without subgroups).
fn sources(subgroups: bool) -> [(&'static str, Vec<&'static str>); 5] {
    let (enable, reduce) = if subgroups {
        (ENABLE_SUBGROUPS, REDUCE_SUBGROUP)
    } else {
        ("", REDUCE)
    };
    [
        ("matmul", vec![MatmulParams::WGSL, COMMON, MATMUL]),
        (
            "layer_norm",
            vec![enable, LayerNormParams::WGSL, LAYERNORM, reduce],
        ),
        ("attention", vec![AttentionParams::WGSL, ATTENTION]),
        (
            "pooling",
            vec![enable, PoolingParams::WGSL, POOLING, reduce],
        ),
        (
            "elementwise",
            vec![ElementwiseParams::WGSL, COMMON, ELEMENTWISE],
        ),
    ]
}

/// The sizes that change from batch to batch: `rows` token rows (`batch · seq` in the
/// encoder), `batch` sentences of `seq` tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Shape {
    pub rows: usize,
    pub batch: usize,
    pub seq: usize,
}

impl Shape {
    /// A padded batch: `batch` sentences of `seq` tokens.
    pub fn batch(batch: usize, seq: usize) -> Self {
        Self {
            rows: batch * seq,
            batch,
            seq,
        }
    }

    /// `rows` independent rows (matmul, LayerNorm, element-wise kernels).
    pub fn rows(rows: usize) -> Self {
        Self::batch(rows, 1)
    }
}

/// One kernel launch, with the sizes that do not depend on the batch. Bindings (after the
/// parameter block at binding 0) are those of its `.wgsl` file.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Op {
    /// `act(x·wᵀ + bias) (+ residual)`, x `[rows, k]`, w `[n, k]`: x, w, bias, residual, y.
    Matmul { n: usize, k: usize, flags: u32 },
    /// Row-wise LayerNorm of `[rows, cols]`: x, gamma, beta, y.
    LayerNorm { cols: usize, eps: f32 },
    /// Masked multi-head attention of `[batch·seq, 3·heads·head_dim]`: qkv, mask, context.
    Attention { heads: usize, head_dim: usize },
    /// Mean over the mask, then L2 normalisation, `[batch·seq, dim]` → `[batch, dim]`:
    /// x, mask, pooled.
    MeanPoolL2 { dim: usize },
    /// `x[r, c] += pos[r mod seq, c] + type0[c]` over `[rows, cols]`: x, pos, type0.
    EmbedAdd { cols: usize },
    /// `x = gelu(x)` in place over `rows` values: x.
    Gelu,
}

/// A parameter block of any kernel.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Params {
    Matmul(MatmulParams),
    LayerNorm(LayerNormParams),
    Attention(AttentionParams),
    Pooling(PoolingParams),
    Elementwise(ElementwiseParams),
}

impl Params {
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            Self::Matmul(p) => p.as_bytes(),
            Self::LayerNorm(p) => p.as_bytes(),
            Self::Attention(p) => p.as_bytes(),
            Self::Pooling(p) => p.as_bytes(),
            Self::Elementwise(p) => p.as_bytes(),
        }
    }
}

impl Op {
    /// The parameter block for a batch of `shape`.
    pub fn params(&self, s: Shape) -> Params {
        let u = |v: usize| v as u32;
        match *self {
            Op::Matmul { n, k, flags } => Params::Matmul(MatmulParams {
                m: u(s.rows),
                n: u(n),
                k: u(k),
                flags,
            }),
            Op::LayerNorm { cols, eps } => Params::LayerNorm(LayerNormParams {
                rows: u(s.rows),
                cols: u(cols),
                eps,
                _pad: 0,
            }),
            Op::Attention { heads, head_dim } => Params::Attention(AttentionParams {
                batch: u(s.batch),
                seq: u(s.seq),
                heads: u(heads),
                head_dim: u(head_dim),
                hidden: u(heads * head_dim),
                scale: 1.0 / (head_dim as f32).sqrt(),
                _pad0: 0,
                _pad1: 0,
            }),
            Op::MeanPoolL2 { dim } => Params::Pooling(PoolingParams {
                batch: u(s.batch),
                seq: u(s.seq),
                dim: u(dim),
                _pad: 0,
            }),
            Op::EmbedAdd { cols } => Params::Elementwise(ElementwiseParams {
                len: u(s.rows * cols),
                seq: u(s.seq),
                cols: u(cols),
                _pad: 0,
            }),
            Op::Gelu => Params::Elementwise(ElementwiseParams {
                len: u(s.rows),
                seq: 1,
                cols: 1,
                _pad: 0,
            }),
        }
    }

    /// The workgroup grid for a batch of `shape`.
    pub fn workgroups(&self, s: Shape) -> (u32, u32, u32) {
        let u = |v: usize| v as u32;
        let rows = grid(u(s.rows));
        match *self {
            Op::Matmul { n, .. } => (
                u(n).div_ceil(MATMUL_TILE),
                u(s.rows).div_ceil(MATMUL_TILE),
                1,
            ),
            Op::LayerNorm { .. } => (rows.0, rows.1, 1),
            Op::Attention { heads, .. } => (u(s.seq), u(heads), u(s.batch)),
            Op::MeanPoolL2 { .. } => (u(s.batch), 1, 1),
            Op::EmbedAdd { cols } => elementwise(u(s.rows * cols)),
            Op::Gelu => elementwise(u(s.rows)),
        }
    }
}

/// Workgroups for `n` independent items as (x, y): x at most 65535, as the kernels expect
/// (`index = x + y · 65535`).
fn grid(n: u32) -> (u32, u32) {
    if n <= 65535 {
        (n.max(1), 1)
    } else {
        (65535, n.div_ceil(65535))
    }
}

fn elementwise(len: u32) -> (u32, u32, u32) {
    let (x, y) = grid(len.div_ceil(ELEMENTWISE_THREADS));
    (x, y, 1)
}

/// Fails unless the attention kernel handles sequences of `seq` tokens and heads of `head_dim`.
pub(crate) fn check_attention_shape(seq: usize, head_dim: usize) -> Result<()> {
    if seq > ATTENTION_MAX_SEQ {
        bail!("the GPU attention kernel handles up to {ATTENTION_MAX_SEQ} tokens, got {seq}");
    }
    if head_dim == 0 || head_dim > ATTENTION_THREADS || ATTENTION_THREADS % head_dim != 0 {
        bail!("the GPU attention kernel needs a head size dividing {ATTENTION_THREADS}, got {head_dim}");
    }
    Ok(())
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use wgpu::naga;

    /// Every module (generated `Params` included) parses and validates without a GPU, with
    /// and without subgroups (which need that capability).
    #[test]
    fn shaders_validate() {
        let with = naga::valid::Capabilities::SUBGROUP;
        let sources = [(false, naga::valid::Capabilities::empty()), (true, with)]
            .into_iter()
            .flat_map(|(subgroups, caps)| super::sources(subgroups).map(|s| (s, caps)));
        for ((label, parts), capabilities) in sources {
            let module = naga::front::wgsl::parse_str(&parts.concat())
                .unwrap_or_else(|e| panic!("{label}: {}", e.emit_to_string(&parts.concat())));
            let mut validator =
                naga::valid::Validator::new(naga::valid::ValidationFlags::all(), capabilities);
            validator.subgroup_stages(naga::valid::ShaderStages::COMPUTE);
            validator.subgroup_operations(naga::valid::SubgroupOperationSet::all());
            validator
                .validate(&module)
                .unwrap_or_else(|e| panic!("{label}: {e:?}"));
        }
    }
}
