//! The kernels' uniform parameter blocks: one `#[repr(C)]` struct per kernel, padding
//! spelled out, its bytes as uploaded, and the WGSL `struct Params` generated from the same
//! field list (the `.wgsl` files do not declare it), so the two layouts cannot drift apart.

/// A kernel's uniform parameter block, viewed as the bytes the GPU reads.
///
/// # Safety
///
/// Implement only (through [`uniform_params!`]) for `#[repr(C)]` structs whose fields are all
/// 4-byte scalars (`u32`, `f32`) and whose size is a multiple of 16 bytes. Such a struct has
/// no padding (every field is 4-aligned and 4 bytes long: the macro checks that the size is
/// exactly 4 × the field count), so every byte of it is initialised and `as_bytes` may view
/// it as `[u8]`. WGSL reads uniforms little-endian; every target we build for is (checked
/// below). A uniform struct of 4-byte scalars has the same layout in WGSL (offsets 0, 4, 8, …,
/// size rounded up to 16), hence the size check.
pub(crate) unsafe trait UniformParams: Copy + 'static {
    /// The WGSL declaration of the same struct, named `Params`, prepended to the kernel's
    /// source: the layout is spelled once, here.
    const WGSL: &'static str;

    fn as_bytes(&self) -> &[u8] {
        // SAFETY: the trait's contract: `Self` is plain old data with no padding bytes.
        unsafe { std::slice::from_raw_parts((self as *const Self).cast::<u8>(), size_of::<Self>()) }
    }
}

/// [`MatmulParams::flags`]: exact-erf GELU after the bias.
pub(crate) const FLAG_GELU: u32 = 1;
/// [`MatmulParams::flags`]: add `residual` (after the bias and any GELU).
pub(crate) const FLAG_RESIDUAL: u32 = 2;

/// [`PoolingParams::mode`]: the mean of the tokens the mask keeps.
pub(crate) const POOL_MEAN: u32 = 0;
/// [`PoolingParams::mode`]: the first token.
pub(crate) const POOL_CLS: u32 = 1;
/// [`PoolingParams::mode`]: the last token the mask keeps.
pub(crate) const POOL_LAST: u32 = 2;
/// [`PoolingParams::mode`]: the element-wise maximum over the tokens the mask keeps.
pub(crate) const POOL_MAX: u32 = 3;

const _: () = assert!(
    cfg!(target_endian = "little"),
    "WGSL uniforms are little-endian"
);

/// The field types a parameter block may hold (4-byte scalars).
trait Scalar {}
impl Scalar for u32 {}
impl Scalar for f32 {}
const fn scalar<T: Scalar>() {}

/// Declares a parameter struct and implements [`UniformParams`] for it after checking, at
/// compile time, the conditions that make that sound.
macro_rules! uniform_params {
    ($(#[$meta:meta])* $name:ident { $($(#[$fmeta:meta])* $field:ident: $ty:ty,)* }) => {
        $(#[$meta])*
        #[repr(C)]
        #[derive(Debug, Clone, Copy, Default, PartialEq)]
        pub(crate) struct $name {
            $($(#[$fmeta])* pub $field: $ty,)*
        }
        const _: () = {
            $(scalar::<$ty>();)*
            let fields = 0 $(+ { let _ = stringify!($field); 1 })*;
            assert!(size_of::<$name>() == 4 * fields && size_of::<$name>() % 16 == 0);
        };
        // SAFETY: checked just above: `#[repr(C)]`, 4-byte scalar fields only, no padding,
        // size a multiple of 16.
        unsafe impl UniformParams for $name {
            const WGSL: &'static str = concat!(
                "struct Params {\n",
                $("    ", stringify!($field), ": ", stringify!($ty), ",\n",)*
                "}\n",
            );
        }
    };
}

uniform_params! {
    /// `wgsl/matmul.wgsl`: `y[m, n] = act(x[m, k] · w[n, k]ᵀ + bias) (+ residual)`.
    MatmulParams {
        m: u32,
        n: u32,
        k: u32,
        /// [`FLAG_GELU`] | [`FLAG_RESIDUAL`].
        flags: u32,
    }
}

uniform_params! {
    /// `wgsl/layernorm.wgsl`: row-wise LayerNorm of `[rows, cols]`.
    LayerNormParams {
        rows: u32,
        cols: u32,
        eps: f32,
        _pad: u32,
    }
}

uniform_params! {
    /// `wgsl/attention.wgsl`: masked multi-head attention over a fused QKV buffer of `stride`
    /// values a token (queries first, keys at `k_offset`, values at `v_offset`).
    AttentionParams {
        batch: u32,
        seq: u32,
        heads: u32,
        head_dim: u32,
        stride: u32,
        k_offset: u32,
        v_offset: u32,
        /// Query heads per key/value head (grouped-query attention; 1 = one each).
        group: u32,
        scale: f32,
        /// 0: no relative-position bias; else the bias table is `[heads, 2·rel_span − 1]`
        /// (MPNet), indexed by `key − query + rel_span − 1`.
        rel_span: u32,
        /// A sliding window (ModernBERT's and Gemma's local layers): only keys with `|key −
        /// query| < window`; 0 = every key.
        window: u32,
        /// 1: keys after the query are masked (Qwen3's causal attention).
        causal: u32,
    }
}

uniform_params! {
    /// `wgsl/pooling.wgsl`: pooling over the mask and L2 normalisation of `[batch·seq, dim]`.
    PoolingParams {
        batch: u32,
        seq: u32,
        dim: u32,
        /// [`POOL_MEAN`], [`POOL_CLS`], [`POOL_LAST`] or [`POOL_MAX`].
        mode: u32,
    }
}

uniform_params! {
    /// `wgsl/rms_norm.wgsl`: row-wise RMSNorm of `[rows, cols]`, plus the residual when
    /// `residual` is 1.
    RmsNormParams {
        rows: u32,
        cols: u32,
        eps: f32,
        residual: u32,
    }
}

uniform_params! {
    /// `wgsl/head_norm_rope.wgsl`: per-head RMSNorm and rotary positions over the queries and
    /// keys of the token rows of a `[rows, (heads + 2 · kv_heads) · 2 · half]` QKV buffer;
    /// position = row mod `seq`.
    HeadNormRopeParams {
        rows: u32,
        seq: u32,
        heads: u32,
        kv_heads: u32,
        half: u32,
        eps: f32,
        _pad: u32,
        _pad2: u32,
    }
}

uniform_params! {
    /// `wgsl/rope.wgsl`: rotary positions over the queries and keys of the token rows of a
    /// `[rows, 3 · heads · 2 · half]` QKV buffer, `len = rows · 2 · heads · half` pairs;
    /// position = row mod `seq`.
    RopeParams {
        len: u32,
        seq: u32,
        heads: u32,
        half: u32,
    }
}

/// The gate activations of [`GluParams::act`].
pub(crate) const GLU_GELU: u32 = 0;
pub(crate) const GLU_SILU: u32 = 1;
pub(crate) const GLU_GELU_TANH: u32 = 2;

uniform_params! {
    /// `wgsl/glu.wgsl`: `y[r, j] = act(x[r, j]) · x[r, inter + j]`, `len = rows · inter`.
    GluParams {
        len: u32,
        inter: u32,
        /// [`GLU_GELU`], [`GLU_SILU`] or [`GLU_GELU_TANH`].
        act: u32,
        _pad: u32,
    }
}

uniform_params! {
    /// `wgsl/elementwise.wgsl` (`embed_add` and `gelu_inplace`): `len` values of `[·, cols]`
    /// rows, positions repeating every `seq` rows.
    ElementwiseParams {
        len: u32,
        seq: u32,
        cols: u32,
        _pad: u32,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_are_the_fields_in_order_little_endian() {
        let p = AttentionParams {
            batch: 1,
            seq: 2,
            heads: 3,
            head_dim: 4,
            stride: 5,
            scale: 0.5,
            causal: 1,
            ..Default::default()
        };
        let words: Vec<u32> = [1, 2, 3, 4, 5, 0, 0, 0, 0.5f32.to_bits(), 0, 0, 1].into();
        let want: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        assert_eq!(p.as_bytes(), want);
        assert_eq!(MatmulParams::default().as_bytes().len(), 16);
        assert_eq!(
            PoolingParams::WGSL,
            "struct Params {\n    batch: u32,\n    seq: u32,\n    dim: u32,\n    mode: u32,\n}\n"
        );
    }
}
