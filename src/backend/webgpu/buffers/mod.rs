//! Buffers and what every submit needs around the kernels, one concern per file: the memory
//! ledger every buffer is created through (`ledger.rs`), the buffer factories (`factories.rs`),
//! recorded [`Step`]s into one compute pass (`steps.rs`), asynchronous readback
//! (`readback.rs`) and error scopes (`scopes.rs`).

mod factories;
mod ledger;
mod readback;
mod scopes;
mod steps;

pub(crate) use factories::{f32_bytes, staging, storage, u32_bytes, uniform, upload_weights};
pub use ledger::GpuMemory;
#[cfg(feature = "testing")]
pub(crate) use ledger::Use;
pub(crate) use ledger::{GpuDevice, Held, MemoryLimits};
pub(crate) use readback::read_f32;
#[cfg(any(feature = "testing", not(target_arch = "wasm32")))]
pub(crate) use readback::read_values;
pub(crate) use scopes::ErrorScopes;
pub(crate) use steps::{params_bytes, record, Step};
