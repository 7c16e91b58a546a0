//! How the kernels store what they read: activations (f32, or f16 with `shader-f16`) and a
//! matmul's weights (f32, or the file's q8_0 / q4_0 blocks, each format with the WGSL that
//! loads it).

const WEIGHTS_F32: &str = include_str!("../wgsl/weights_f32.wgsl");
const WEIGHTS_BLOCKS: &str = include_str!("../wgsl/weights_blocks.wgsl");
const WEIGHTS_Q8_0: &str = include_str!("../wgsl/weights_q8_0.wgsl");
const WEIGHTS_Q4_0: &str = include_str!("../wgsl/weights_q4_0.wgsl");

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
    pub(super) fn wgsl(self) -> &'static str {
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
    pub(super) fn wgsl(self) -> &'static [&'static str] {
        match self {
            Self::F32 => &[WEIGHTS_F32],
            Self::Q8_0 => &[WEIGHTS_BLOCKS, WEIGHTS_Q8_0],
            Self::Q4_0 => &[WEIGHTS_BLOCKS, WEIGHTS_Q4_0],
        }
    }

    pub(super) fn label(self) -> &'static str {
        match self {
            Self::F32 => "matmul_f32",
            Self::Q8_0 => "matmul_q8_0",
            Self::Q4_0 => "matmul_q4_0",
        }
    }

    #[cfg(not(target_arch = "wasm32"))]
    pub(super) fn coop_label(self) -> &'static str {
        match self {
            Self::F32 => "matmul_coop_f32",
            Self::Q8_0 => "matmul_coop_q8_0",
            Self::Q4_0 => "matmul_coop_q4_0",
        }
    }
}
