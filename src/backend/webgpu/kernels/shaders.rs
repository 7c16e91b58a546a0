//! The shader modules' sources: each kernel's parameter struct, then its WGSL files, after
//! the `Act` alias (and the directives its features need); the matmul once per weight format
//! and output. Checked here without a GPU: every module parses and validates with naga.

use super::attention::{AttentionParams, ATTENTION};
use super::elementwise::{ElementwiseParams, ELEMENTWISE};
use super::glu::{GluParams, GLU};
use super::matmul::{MatmulParams, MATMUL, MATMUL_IO, MATMUL_OUT_ACT, MATMUL_OUT_F32};
#[cfg(not(target_arch = "wasm32"))]
use super::matmul::{ENABLE_COOP, MATMUL_COOP};
use super::norm::{LayerNormParams, RmsNormParams, LAYERNORM, RMS_NORM};
use super::params::UniformParams;
use super::pooling::{PoolingParams, POOLING};
use super::rope::{HeadNormRopeParams, RopeParams, HEAD_NORM_ROPE, ROPE};
use super::{Activations, WeightFormat};

const COMMON: &str = include_str!("../wgsl/common.wgsl");
const REDUCE: &str = include_str!("../wgsl/reduce.wgsl");
const REDUCE_SUBGROUP: &str = include_str!("../wgsl/reduce_subgroup.wgsl");
/// The directive a module using subgroup operations starts with: the browser's WGSL requires
/// it; naga (natively) gates them by the device feature instead and rejects the directive.
const ENABLE_SUBGROUPS: &str = if cfg!(target_arch = "wasm32") {
    "enable subgroups;\n"
} else {
    ""
};

/// The matmul's modules, per [`WeightFormat`] the same kernel after that format's
/// `load_weight`, writing an activation and (for [`super::FLAG_RESIDUAL`]) the f32 residual
/// stream.
pub(super) fn matmul_sources(act: Activations) -> [[(&'static str, Vec<&'static str>); 2]; 3] {
    matmul_sources_of(act, (None, MATMUL), WeightFormat::label)
}

/// [`matmul_sources`] on matrix units: matmul_coop.wgsl after its `enable` directive (f16
/// activations: the operands are f16).
#[cfg(not(target_arch = "wasm32"))]
pub(super) fn coop_matmul_sources(act: Activations) -> [[(&'static str, Vec<&'static str>); 2]; 3] {
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
pub(super) fn sources(subgroups: bool, act: Activations) -> [(&'static str, Vec<&'static str>); 8] {
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
        use super::super::Activations;
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
        use super::super::Activations;
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
