//! The compiled compute pipelines ([`Kernels`]): one per kernel entry point, the matmul once
//! per weight format and output, natively without wgpu's runtime checks; and the pipeline
//! each [`Op`] runs on.

#[cfg(not(target_arch = "wasm32"))]
use super::shaders::coop_matmul_sources;
use super::shaders::{matmul_sources, sources};
use super::{Activations, Matmul, Op, FLAG_RESIDUAL};

/// The compiled compute pipelines (one per kernel entry point; the matmul once per
/// [`super::WeightFormat`], in `WeightFormat::ALL` order, each writing an activation or, with
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
    /// wgpu's cooperative matrices ([`crate::backend::webgpu::matrix_units::MatrixUnits`]),
    /// `shader-f16` and `subgroups`, and `act` is f16.
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
            Op::Matmul(Matmul { format, flags, .. }) => {
                &self.matmul[*format as usize][usize::from(flags & FLAG_RESIDUAL != 0)]
            }
            Op::LayerNorm(_) => &self.layer_norm,
            Op::RmsNorm(_) => &self.rms_norm,
            Op::HeadNormRope(_) => &self.head_norm_rope,
            Op::Attention(_) => &self.attention,
            Op::PoolL2(_) => &self.pooling,
            Op::EmbedAdd(_) => &self.embed_add,
            Op::Rope(_) => &self.rope,
            Op::Glu(_) => &self.glu,
            #[cfg(feature = "testing")]
            Op::Gelu(_) => &self.gelu,
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
