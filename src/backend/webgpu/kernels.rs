//! The WGSL kernels (built from the `.wgsl` files next to this one, each after its `Params`
//! struct generated in `params.rs`), their pipelines, and [`Op`]: one kernel launch described
//! by what stays fixed for a model (widths, flags); given a batch's [`Shape`], it yields the
//! kernel's parameter block and workgroup grid. The encoder and the one-shot kernel runs
//! (`runners.rs`) launch kernels only through it.

use anyhow::{bail, Result};

use super::params::{
    AttentionParams, ElementwiseParams, GluParams, HeadNormRopeParams, LayerNormParams,
    MatmulParams, PoolingParams, RmsNormParams, RopeParams, UniformParams, FLAG_RESIDUAL, GLU_GELU,
    GLU_GELU_TANH, GLU_SILU, POOL_CLS, POOL_LAST, POOL_MAX, POOL_MEAN,
};
use crate::backend::cpu::GateActivation;
use crate::model::Pooling;

const COMMON: &str = include_str!("wgsl/common.wgsl");
const MATMUL_IO: &str = include_str!("wgsl/matmul_io.wgsl");
const MATMUL: &str = include_str!("wgsl/matmul.wgsl");
#[cfg(not(target_arch = "wasm32"))]
const MATMUL_COOP: &str = include_str!("wgsl/matmul_coop.wgsl");
/// The directive of wgpu's cooperative matrices (native only; naga requires it).
#[cfg(not(target_arch = "wasm32"))]
const ENABLE_COOP: &str = "enable wgpu_cooperative_matrix;\n";
const WEIGHTS_F32: &str = include_str!("wgsl/weights_f32.wgsl");
const WEIGHTS_BLOCKS: &str = include_str!("wgsl/weights_blocks.wgsl");
const WEIGHTS_Q8_0: &str = include_str!("wgsl/weights_q8_0.wgsl");
const WEIGHTS_Q4_0: &str = include_str!("wgsl/weights_q4_0.wgsl");
const LAYERNORM: &str = include_str!("wgsl/layernorm.wgsl");
const RMS_NORM: &str = include_str!("wgsl/rms_norm.wgsl");
const HEAD_NORM_ROPE: &str = include_str!("wgsl/head_norm_rope.wgsl");
const ATTENTION: &str = include_str!("wgsl/attention.wgsl");
const POOLING: &str = include_str!("wgsl/pooling.wgsl");
const ELEMENTWISE: &str = include_str!("wgsl/elementwise.wgsl");
const ROPE: &str = include_str!("wgsl/rope.wgsl");
const GLU: &str = include_str!("wgsl/glu.wgsl");
const REDUCE: &str = include_str!("wgsl/reduce.wgsl");
const REDUCE_SUBGROUP: &str = include_str!("wgsl/reduce_subgroup.wgsl");
/// The directive a module using subgroup operations starts with: the browser's WGSL requires
/// it; naga (natively) gates them by the device feature instead and rejects the directive.
const ENABLE_SUBGROUPS: &str = if cfg!(target_arch = "wasm32") {
    "enable subgroups;\n"
} else {
    ""
};

/// How activations (the buffers between kernels, but the f32 residual stream) are stored:
/// f32, or f16 with the `shader-f16` feature (half the memory and traffic). Kernels always
/// compute in f32: they load `f32(a[i])` and store `Act(v)`, `Act` being the alias prepended
/// here, so each kernel has one source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Activations {
    F32,
    F16,
}

impl Activations {
    /// Bytes per stored value.
    pub fn bytes(self) -> usize {
        match self {
            Self::F32 => 4,
            Self::F16 => 2,
        }
    }

    /// `alias Act`, after the directive f16 storage needs (naga requires it too).
    fn wgsl(self) -> &'static str {
        match self {
            Self::F32 => "alias Act = f32;\n",
            Self::F16 => "enable f16;\nalias Act = f16;\n",
        }
    }

    /// Host values as this type's little-endian bytes (f16: rounded to nearest).
    #[cfg(any(feature = "testing", not(target_arch = "wasm32")))]
    pub fn encode(self, data: &[f32]) -> Vec<u8> {
        match self {
            Self::F32 => data.iter().flat_map(|v| v.to_le_bytes()).collect(),
            Self::F16 => data
                .iter()
                .flat_map(|v| half::f16::from_f32(*v).to_le_bytes())
                .collect(),
        }
    }

    /// The values of this type's little-endian bytes.
    pub fn decode(self, bytes: &[u8]) -> Vec<f32> {
        match self {
            Self::F32 => bytes
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
            Self::F16 => bytes
                .chunks_exact(2)
                .map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f32())
                .collect(),
        }
    }
}

/// The matmul's output alias: the residual-adding projections write the f32 residual
/// stream (`x`, the sums LayerNorm reads), the others an activation.
const MATMUL_OUT_ACT: &str = "alias Out = Act;\n";
const MATMUL_OUT_F32: &str = "alias Out = f32;\n";

/// Output tile of the matmul kernel (rows and columns per workgroup).
const MATMUL_TILE: u32 = 64;
/// Threads per workgroup of the attention kernel; `head_dim` must divide it or be a multiple
/// of it, up to [`ATTENTION_MAX_HEAD_DIM`].
const ATTENTION_THREADS: usize = 64;
/// Widest head the attention kernel holds in workgroup memory (Gemma 3's 256).
const ATTENTION_MAX_HEAD_DIM: usize = 256;
/// Longest sequence the attention kernel holds in workgroup memory (and the span of MPNet's
/// relative-position bias table: distances −511..=511).
pub(crate) const ATTENTION_MAX_SEQ: usize = 512;
/// Threads per workgroup of the element-wise kernels.
const ELEMENTWISE_THREADS: u32 = 256;

/// How a matmul's weight matrix is stored on the GPU: f32, or the file's GGML blocks of 32
/// values along k (dequantized inside the kernel).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WeightFormat {
    F32,
    Q8_0,
    Q4_0,
}

impl WeightFormat {
    pub const ALL: [Self; 3] = [Self::F32, Self::Q8_0, Self::Q4_0];

    /// Bytes of one block of 32 weights (f32: 32 × 4).
    pub fn block_bytes(self) -> usize {
        match self {
            Self::F32 => 128,
            Self::Q8_0 => 34,
            Self::Q4_0 => 18,
        }
    }

    /// The WGSL that declares `WeightWord` and `load_weight` for matmul.wgsl.
    fn wgsl(self) -> &'static [&'static str] {
        match self {
            Self::F32 => &[WEIGHTS_F32],
            Self::Q8_0 => &[WEIGHTS_BLOCKS, WEIGHTS_Q8_0],
            Self::Q4_0 => &[WEIGHTS_BLOCKS, WEIGHTS_Q4_0],
        }
    }

    fn label(self) -> &'static str {
        match self {
            Self::F32 => "matmul_f32",
            Self::Q8_0 => "matmul_q8_0",
            Self::Q4_0 => "matmul_q4_0",
        }
    }

    #[cfg(not(target_arch = "wasm32"))]
    fn coop_label(self) -> &'static str {
        match self {
            Self::F32 => "matmul_coop_f32",
            Self::Q8_0 => "matmul_coop_q8_0",
            Self::Q4_0 => "matmul_coop_q4_0",
        }
    }
}

/// The compiled compute pipelines (one per kernel entry point; the matmul once per
/// [`WeightFormat`], in `WeightFormat::ALL` order, each writing an activation or, with
/// [`FLAG_RESIDUAL`], the f32 residual stream).
#[derive(Clone)]
pub(crate) struct Kernels {
    matmul: [[wgpu::ComputePipeline; 2]; 3],
    layer_norm: wgpu::ComputePipeline,
    rms_norm: wgpu::ComputePipeline,
    head_norm_rope: wgpu::ComputePipeline,
    attention: wgpu::ComputePipeline,
    pooling: wgpu::ComputePipeline,
    embed_add: wgpu::ComputePipeline,
    rope: wgpu::ComputePipeline,
    glu: wgpu::ComputePipeline,
    #[cfg(feature = "testing")]
    gelu: wgpu::ComputePipeline,
}

impl Kernels {
    /// Compiles the kernels; `subgroups`: the device has the `subgroups` feature, and the
    /// reductions (LayerNorm, pooling, the attention's softmax) use it; `act`: how
    /// activations are stored (f16 needs the `shader-f16` feature); `trusted_matmul`: the
    /// matmul without wgpu's runtime checks (see [`trusted_checks`]).
    pub fn new(
        device: &wgpu::Device,
        subgroups: bool,
        act: Activations,
        trusted_matmul: bool,
    ) -> Self {
        let pipeline = |label: &str, module: &wgpu::ShaderModule, entry: &str| {
            compile(device, label, module, entry, true)
        };
        let [layer_norm, rms_norm, head_norm_rope, attention, pooling, elementwise, rope, glu] =
            sources(subgroups, act).map(|(label, parts)| module(device, label, &parts));
        Self {
            matmul: matmul_pipelines(device, matmul_sources(act), trusted_matmul),
            layer_norm: pipeline("layer_norm", &layer_norm, "main"),
            rms_norm: pipeline("rms_norm", &rms_norm, "main"),
            head_norm_rope: pipeline("head_norm_rope", &head_norm_rope, "main"),
            attention: pipeline("attention", &attention, "main"),
            pooling: pipeline("pooling", &pooling, "main"),
            embed_add: pipeline("embed_add", &elementwise, "embed_add"),
            rope: pipeline("rope", &rope, "main"),
            glu: pipeline("glu", &glu, "main"),
            #[cfg(feature = "testing")]
            gelu: pipeline("gelu", &elementwise, "gelu_inplace"),
        }
    }

    /// These kernels with the matmul on matrix units (matmul_coop.wgsl): the device has
    /// wgpu's cooperative matrices ([`super::matrix_units::MatrixUnits`]), `shader-f16` and
    /// `subgroups`, and `act` is f16.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn with_matrix_units(
        &self,
        device: &wgpu::Device,
        act: Activations,
        trusted_matmul: bool,
    ) -> Self {
        Self {
            matmul: matmul_pipelines(device, coop_matmul_sources(act), trusted_matmul),
            ..self.clone()
        }
    }

    /// These kernels with each matmul writing the other output type (an activation where
    /// the f32 residual stream is expected and back): a wrong matmul for the self-check's
    /// test. Only on kernels with wgpu's runtime checks (the f32 writes overrun the f16
    /// buffers, and are clamped).
    #[cfg(all(test, not(target_arch = "wasm32")))]
    pub fn with_outputs_swapped(&self) -> Self {
        Self {
            matmul: self.matmul.clone().map(|[act, f32]| [f32, act]),
            ..self.clone()
        }
    }

    /// The pipeline that runs `op`.
    pub fn pipeline(&self, op: &Op) -> &wgpu::ComputePipeline {
        match op {
            Op::Matmul { format, flags, .. } => {
                &self.matmul[*format as usize][usize::from(flags & FLAG_RESIDUAL != 0)]
            }
            Op::LayerNorm { .. } => &self.layer_norm,
            Op::RmsNorm { .. } => &self.rms_norm,
            Op::HeadNormRope { .. } => &self.head_norm_rope,
            Op::Attention { .. } => &self.attention,
            Op::PoolL2 { .. } => &self.pooling,
            Op::EmbedAdd { .. } => &self.embed_add,
            Op::Rope { .. } => &self.rope,
            Op::Glu { .. } => &self.glu,
            #[cfg(feature = "testing")]
            Op::Gelu => &self.gelu,
        }
    }
}

/// The runtime checks the matmul goes without natively (the browser's WebGPU keeps its own):
/// naga's clamp of every workgroup-array and buffer index, and its counter on every loop —
/// about two operations per two vec4 loads and 16 multiply-adds of the inner loop.
fn trusted_checks() -> wgpu::ShaderRuntimeChecks {
    wgpu::ShaderRuntimeChecks {
        bounds_checks: false,
        force_loop_bounding: false,
        ..wgpu::ShaderRuntimeChecks::checked()
    }
}

/// A shader module from its source parts.
fn module(device: &wgpu::Device, label: &str, parts: &[&str]) -> wgpu::ShaderModule {
    device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some(label),
        source: wgpu::ShaderSource::Wgsl(parts.concat().into()),
    })
}

/// The pipeline of `module`'s `entry`; `zero_tiles`: wgpu zeroes the workgroup memory before
/// each run (the WebGPU default).
fn compile(
    device: &wgpu::Device,
    label: &str,
    module: &wgpu::ShaderModule,
    entry: &str,
    zero_tiles: bool,
) -> wgpu::ComputePipeline {
    device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some(label),
        layout: None,
        module,
        entry_point: Some(entry),
        compilation_options: wgpu::PipelineCompilationOptions {
            zero_initialize_workgroup_memory: zero_tiles,
            ..Default::default()
        },
        cache: None,
    })
}

/// The matmul pipelines of `sources`; `trusted`: without wgpu's runtime checks.
fn matmul_pipelines(
    device: &wgpu::Device,
    sources: [[(&'static str, Vec<&'static str>); 2]; 3],
    trusted: bool,
) -> [[wgpu::ComputePipeline; 2]; 3] {
    sources.map(|outputs| {
        outputs.map(|(label, parts)| {
            if !trusted {
                return compile(device, label, &module(device, label, &parts), "main", true);
            }
            let descriptor = wgpu::ShaderModuleDescriptor {
                label: Some(label),
                source: wgpu::ShaderSource::Wgsl(parts.concat().into()),
            };
            // SAFETY: matmul.wgsl and matmul_coop.wgsl mask their own edges: every read and
            // write of a binding is guarded by m, n and k of the parameter block, which the
            // graph's buffers are sized from; their workgroup arrays are indexed by the
            // thread (or subgroup) and a k below TK only; their loops run to k. The kernel
            // tests' edge shapes prove it on lavapipe, the self-check on matrix units.
            let module =
                unsafe { device.create_shader_module_trusted(descriptor, trusted_checks()) };
            // The tiles (and the scratch blocks) are written in full before each barrier:
            // no zeroing needed.
            compile(device, label, &module, "main", false)
        })
    })
}

/// The matmul's modules, per [`WeightFormat`] the same kernel after that format's
/// `load_weight`, writing an activation and (for [`FLAG_RESIDUAL`]) the f32 residual stream.
fn matmul_sources(act: Activations) -> [[(&'static str, Vec<&'static str>); 2]; 3] {
    matmul_sources_of(act, (None, MATMUL), WeightFormat::label)
}

/// [`matmul_sources`] on matrix units: matmul_coop.wgsl after its `enable` directive (f16
/// activations: the operands are f16).
#[cfg(not(target_arch = "wasm32"))]
fn coop_matmul_sources(act: Activations) -> [[(&'static str, Vec<&'static str>); 2]; 3] {
    debug_assert_eq!(act, Activations::F16, "matrix units take f16 operands");
    matmul_sources_of(
        act,
        (Some(ENABLE_COOP), MATMUL_COOP),
        WeightFormat::coop_label,
    )
}

/// `kernel` (after its directive, if any) per weight format and output, with `label`'s names.
fn matmul_sources_of(
    act: Activations,
    (directive, kernel): (Option<&'static str>, &'static str),
    label: fn(WeightFormat) -> &'static str,
) -> [[(&'static str, Vec<&'static str>); 2]; 3] {
    WeightFormat::ALL.map(|f| {
        [MATMUL_OUT_ACT, MATMUL_OUT_F32].map(|out| {
            let mut parts: Vec<&str> = directive.into_iter().collect();
            parts.extend([act.wgsl(), out, MatmulParams::WGSL, COMMON]);
            parts.extend(f.wgsl());
            parts.extend([MATMUL_IO, kernel]);
            (label(f), parts)
        })
    })
}

/// Each other shader module's label and source parts: its parameter struct, then the WGSL
/// files (the reductions' `reduce_sum` / `reduce_max` with or without subgroups), after the
/// `Act` alias. The element-wise kernels work on the f32 residual stream only; rotary positions
/// and the gated feed-forward's middle on activations.
fn sources(subgroups: bool, act: Activations) -> [(&'static str, Vec<&'static str>); 8] {
    let (enable, reduce) = if subgroups {
        (ENABLE_SUBGROUPS, REDUCE_SUBGROUP)
    } else {
        ("", REDUCE)
    };
    let act = act.wgsl();
    [
        (
            "layer_norm",
            vec![enable, act, LayerNormParams::WGSL, LAYERNORM, reduce],
        ),
        (
            "rms_norm",
            vec![enable, RmsNormParams::WGSL, RMS_NORM, reduce],
        ),
        (
            "head_norm_rope",
            vec![
                enable,
                act,
                HeadNormRopeParams::WGSL,
                HEAD_NORM_ROPE,
                reduce,
            ],
        ),
        (
            "attention",
            vec![enable, act, AttentionParams::WGSL, ATTENTION, reduce],
        ),
        (
            "pooling",
            vec![enable, act, PoolingParams::WGSL, POOLING, reduce],
        ),
        (
            "elementwise",
            vec![ElementwiseParams::WGSL, COMMON, ELEMENTWISE],
        ),
        ("rope", vec![act, RopeParams::WGSL, ROPE]),
        ("glu", vec![act, GluParams::WGSL, COMMON, GLU]),
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
    /// `act(x·wᵀ + bias) (+ residual)`, x `[rows, k]`, w `[n, k]` stored as `format`:
    /// x, w, bias, residual, y.
    Matmul {
        n: usize,
        k: usize,
        flags: u32,
        format: WeightFormat,
    },
    /// Row-wise LayerNorm of `[rows, cols]`: x, gamma, beta, y.
    LayerNorm { cols: usize, eps: f32 },
    /// Row-wise RMSNorm of `[rows, cols]`, plus `residual` when asked: x, gamma, residual
    /// (unread without), y. All f32.
    RmsNorm {
        cols: usize,
        eps: f32,
        residual: bool,
    },
    /// Per-head RMSNorm, then rotary positions, in place on the queries and keys of
    /// `[batch·seq, (heads + 2·kv_heads)·2·half]`: qkv, query norm `[2·half]`, key norm
    /// `[2·half]`, cos `[seq, half]`, sin `[seq, half]`.
    HeadNormRope {
        heads: usize,
        kv_heads: usize,
        half: usize,
        eps: f32,
    },
    /// Masked multi-head attention of `[batch·seq, (heads + 2·kv_heads)·head_dim]` (query
    /// head h reads key/value head h·kv_heads/heads), plus MPNet's relative-position bias
    /// (`[heads, 2·ATTENTION_MAX_SEQ − 1]`) when `relative_bias`: qkv, mask, bias (unread
    /// without), context `[batch·seq, heads·head_dim]`.
    Attention {
        heads: usize,
        kv_heads: usize,
        head_dim: usize,
        relative_bias: bool,
        /// Local layers (ModernBERT's, Gemma's): a key is seen when `|key − query| < window`
        /// (0: all).
        window: usize,
        /// Keys after the query are not seen (Qwen3).
        causal: bool,
    },
    /// Pooling over the mask (mean, first, last or max token), then L2 normalisation,
    /// `[batch·seq, dim]` → `[batch, dim]`: x, mask, pooled.
    PoolL2 { dim: usize, pooling: Pooling },
    /// `x[r, c] += pos[r mod seq, c] + type0[c]` over `[rows, cols]`: x, pos, type0.
    EmbedAdd { cols: usize },
    /// Rotary positions in place on the queries and keys of `[batch·seq, 3·heads·2·half]`:
    /// qkv, cos `[seq, half]`, sin `[seq, half]`.
    Rope { heads: usize, half: usize },
    /// `y[r, j] = act(x[r, j]) · x[r, inter + j]` (SwiGLU, GeGLU or Gemma's tanh GeGLU), x
    /// `[rows, 2·inter]`: x, y.
    Glu { inter: usize, act: GateActivation },
    /// `x = gelu(x)` in place over `rows` values: x. Only to measure the approximation (the
    /// matmul fuses GELU), so only in the kernel tests.
    #[cfg(feature = "testing")]
    Gelu,
}

/// A parameter block of any kernel.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Params {
    Matmul(MatmulParams),
    LayerNorm(LayerNormParams),
    RmsNorm(RmsNormParams),
    HeadNormRope(HeadNormRopeParams),
    Attention(AttentionParams),
    Pooling(PoolingParams),
    Elementwise(ElementwiseParams),
    Rope(RopeParams),
    Glu(GluParams),
}

impl Params {
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            Self::Matmul(p) => p.as_bytes(),
            Self::LayerNorm(p) => p.as_bytes(),
            Self::RmsNorm(p) => p.as_bytes(),
            Self::HeadNormRope(p) => p.as_bytes(),
            Self::Attention(p) => p.as_bytes(),
            Self::Pooling(p) => p.as_bytes(),
            Self::Elementwise(p) => p.as_bytes(),
            Self::Rope(p) => p.as_bytes(),
            Self::Glu(p) => p.as_bytes(),
        }
    }
}

impl Op {
    /// The parameter block for a batch of `shape`.
    pub fn params(&self, s: Shape) -> Params {
        let u = |v: usize| v as u32;
        match *self {
            Op::Matmul { n, k, flags, .. } => Params::Matmul(MatmulParams {
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
            Op::RmsNorm {
                cols,
                eps,
                residual,
            } => Params::RmsNorm(RmsNormParams {
                rows: u(s.rows),
                cols: u(cols),
                eps,
                residual: u32::from(residual),
            }),
            Op::HeadNormRope {
                heads,
                kv_heads,
                half,
                eps,
            } => Params::HeadNormRope(HeadNormRopeParams {
                rows: u(s.rows),
                seq: u(s.seq),
                heads: u(heads),
                kv_heads: u(kv_heads),
                half: u(half),
                eps,
                ..Default::default()
            }),
            Op::Attention {
                heads,
                kv_heads,
                head_dim,
                relative_bias,
                window,
                causal,
            } => Params::Attention(AttentionParams {
                batch: u(s.batch),
                seq: u(s.seq),
                heads: u(heads),
                head_dim: u(head_dim),
                stride: u((heads + 2 * kv_heads) * head_dim),
                k_offset: u(heads * head_dim),
                v_offset: u((heads + kv_heads) * head_dim),
                group: u(heads / kv_heads.max(1)),
                scale: 1.0 / (head_dim as f32).sqrt(),
                rel_span: if relative_bias {
                    u(ATTENTION_MAX_SEQ)
                } else {
                    0
                },
                window: u(window),
                causal: u32::from(causal),
            }),
            Op::PoolL2 { dim, pooling } => Params::Pooling(PoolingParams {
                batch: u(s.batch),
                seq: u(s.seq),
                dim: u(dim),
                mode: match pooling {
                    Pooling::Mean => POOL_MEAN,
                    Pooling::Cls => POOL_CLS,
                    Pooling::Last => POOL_LAST,
                    Pooling::Max => POOL_MAX,
                },
            }),
            Op::EmbedAdd { cols } => Params::Elementwise(ElementwiseParams {
                len: u(s.rows * cols),
                seq: u(s.seq),
                cols: u(cols),
                _pad: 0,
            }),
            Op::Rope { heads, half } => Params::Rope(RopeParams {
                len: u(s.rows * 2 * heads * half),
                seq: u(s.seq),
                heads: u(heads),
                half: u(half),
            }),
            Op::Glu { inter, act } => Params::Glu(GluParams {
                len: u(s.rows * inter),
                inter: u(inter),
                act: match act {
                    GateActivation::Gelu => GLU_GELU,
                    GateActivation::Silu => GLU_SILU,
                    GateActivation::GeluTanh => GLU_GELU_TANH,
                },
                _pad: 0,
            }),
            #[cfg(feature = "testing")]
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
            Op::LayerNorm { .. } | Op::RmsNorm { .. } => (rows.0, rows.1, 1),
            Op::HeadNormRope {
                heads, kv_heads, ..
            } => (rows.0, rows.1, u(heads + kv_heads)),
            Op::Attention { heads, .. } => (u(s.seq), u(heads), u(s.batch)),
            Op::PoolL2 { .. } => (u(s.batch), 1, 1),
            Op::EmbedAdd { cols } => elementwise(u(s.rows * cols)),
            Op::Rope { heads, half } => elementwise(u(s.rows * 2 * heads * half)),
            Op::Glu { inter, .. } => elementwise(u(s.rows * inter)),
            #[cfg(feature = "testing")]
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

/// Fails unless the attention kernel handles sequences of `seq` tokens, heads of `head_dim`
/// and `heads` query heads over `kv_heads` key/value heads.
pub(crate) fn check_attention_shape(
    seq: usize,
    head_dim: usize,
    (heads, kv_heads): (usize, usize),
) -> Result<()> {
    if seq > ATTENTION_MAX_SEQ {
        bail!("the GPU attention kernel handles up to {ATTENTION_MAX_SEQ} tokens, got {seq}");
    }
    let fits = head_dim > 0
        && head_dim <= ATTENTION_MAX_HEAD_DIM
        && (ATTENTION_THREADS.is_multiple_of(head_dim)
            || head_dim.is_multiple_of(ATTENTION_THREADS));
    if !fits {
        bail!(
            "the GPU attention kernel needs a head size dividing {ATTENTION_THREADS} or a \
             multiple of it up to {ATTENTION_MAX_HEAD_DIM}, got {head_dim}"
        );
    }
    if kv_heads == 0 || !heads.is_multiple_of(kv_heads) {
        bail!("{heads} query heads cannot share {kv_heads} key/value heads evenly");
    }
    Ok(())
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use wgpu::naga;

    /// The matmul on matrix units, for every weight format and output: parses, validates
    /// with the capabilities the device then has (cooperative matrices, f16, subgroups), and
    /// naga writes it as SPIR-V, the form Vulkan drivers get. Without a GPU that offers matrix
    /// units (lavapipe and SwiftShader do not) this is what can be proven here; the values are
    /// checked on the device itself before use (`kernels_on_units`).
    #[test]
    fn matmul_on_matrix_units_validates_and_compiles_to_spirv() {
        use super::Activations;
        use naga::valid::Capabilities as C;
        let caps =
            C::SHADER_FLOAT16_IN_FLOAT32 | C::SHADER_FLOAT16 | C::SUBGROUP | C::COOPERATIVE_MATRIX;
        let sources = super::coop_matmul_sources(Activations::F16);
        for (label, parts) in sources.iter().flatten() {
            let source = parts.concat();
            let module = naga::front::wgsl::parse_str(&source)
                .unwrap_or_else(|e| panic!("{label}: {}", e.emit_to_string(&source)));
            let mut validator =
                naga::valid::Validator::new(naga::valid::ValidationFlags::all(), caps);
            validator.subgroup_stages(naga::valid::ShaderStages::COMPUTE);
            validator.subgroup_operations(naga::valid::SubgroupOperationSet::all());
            let info = validator
                .validate(&module)
                .unwrap_or_else(|e| panic!("{label}: {e:?}"));
            let options = naga::back::spv::Options {
                lang_version: (1, 3),
                ..Default::default()
            };
            let words = naga::back::spv::write_vec(&module, &info, &options, None)
                .unwrap_or_else(|e| panic!("{label}: SPIR-V: {e}"));
            assert!(words.len() > 100, "{label}: {} words", words.len());
            let bytes = workgroup_bytes(&module);
            assert!(bytes <= LIMIT, "{label}: {bytes} bytes of workgroup memory");
        }
    }

    /// WebGPU's default `maxComputeWorkgroupStorageSize`, the most the device is asked for.
    const LIMIT: u32 = 16384;

    /// The bytes of a module's workgroup variables.
    fn workgroup_bytes(module: &naga::Module) -> u32 {
        let mut layouter = naga::proc::Layouter::default();
        layouter.update(module.to_ctx()).unwrap();
        module
            .global_variables
            .iter()
            .filter(|(_, v)| v.space == naga::AddressSpace::WorkGroup)
            .map(|(_, v)| layouter[v.ty].size)
            .sum()
    }

    /// Every module (generated `Params` included) parses and validates without a GPU, with
    /// and without subgroups and f16 activations (which need those capabilities). Every module may use
    /// `unpack2x16float` (the quantized weights' f16 scales), core WGSL that naga lists as a
    /// capability (wgpu grants it on every WebGPU, Vulkan, Metal and DX12 device).
    #[test]
    fn shaders_validate() {
        use super::Activations;
        use naga::valid::Capabilities as C;
        let core = C::SHADER_FLOAT16_IN_FLOAT32;
        let caps = |subgroups: bool, act| {
            let mut c = core;
            c.set(C::SUBGROUP, subgroups);
            c.set(C::SHADER_FLOAT16, act == Activations::F16);
            c
        };
        let mut sources = Vec::new();
        for act in [Activations::F32, Activations::F16] {
            for subgroups in [false, true] {
                let c = caps(subgroups, act);
                sources.extend(super::sources(subgroups, act).map(|s| (s, c)));
            }
            let c = caps(false, act);
            sources.extend(
                super::matmul_sources(act)
                    .into_iter()
                    .flatten()
                    .map(|s| (s, c)),
            );
        }
        assert_eq!(sources.len(), 2 * (2 * 8 + 3 * 2));
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
            let bytes = workgroup_bytes(&module);
            assert!(bytes <= LIMIT, "{label}: {bytes} bytes of workgroup memory");
        }
    }
}
