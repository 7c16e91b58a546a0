//! The kernels' uniform parameter blocks: one `#[repr(C)]` struct per kernel (declared with
//! [`uniform_params!`] in the kernel's own file), padding spelled out, its bytes as uploaded,
//! and the WGSL `struct Params` generated from the same field list (the `.wgsl` files do not
//! declare it), so the two layouts cannot drift apart.

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

const _: () = assert!(
    cfg!(target_endian = "little"),
    "WGSL uniforms are little-endian"
);

/// The field types a parameter block may hold (4-byte scalars).
pub(crate) trait Scalar {}
impl Scalar for u32 {}
impl Scalar for f32 {}
pub(crate) const fn scalar<T: Scalar>() {}

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
            $($crate::backend::webgpu::kernels::params::scalar::<$ty>();)*
            let fields = 0 $(+ { let _ = stringify!($field); 1 })*;
            assert!(size_of::<$name>() == 4 * fields && size_of::<$name>() % 16 == 0);
        };
        // SAFETY: checked just above: `#[repr(C)]`, 4-byte scalar fields only, no padding,
        // size a multiple of 16.
        unsafe impl $crate::backend::webgpu::kernels::params::UniformParams for $name {
            const WGSL: &'static str = concat!(
                "struct Params {\n",
                $("    ", stringify!($field), ": ", stringify!($ty), ",\n",)*
                "}\n",
            );
        }
    };
}
pub(crate) use uniform_params;

#[cfg(test)]
mod tests {
    use super::super::attention::AttentionParams;
    use super::super::matmul::MatmulParams;
    use super::super::pooling::PoolingParams;
    use super::UniformParams;

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
