//! Error scopes around a submit: out-of-memory and validation errors as `Result`s.

use std::future::Future;

use anyhow::{bail, Result};

/// Captures out-of-memory and validation errors of the work issued while it is open.
pub(crate) struct ErrorScopes {
    oom: wgpu::ErrorScopeGuard,
    validation: wgpu::ErrorScopeGuard,
}

impl ErrorScopes {
    pub fn open(device: &wgpu::Device) -> Self {
        let oom = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let validation = device.push_error_scope(wgpu::ErrorFilter::Validation);
        Self { oom, validation }
    }

    /// Closes both scopes now and returns their verdict: an error names what went wrong
    /// ("out of memory", a validation message). The verdict need not be awaited at once — work
    /// issued after this call is outside the scopes — so the encoder awaits a batch's with its
    /// readback, and the browser's round trip for it overlaps the next batch's submit.
    pub fn close(self, what: &str) -> impl Future<Output = Result<()>> + 'static {
        let validation = self.validation.pop();
        let oom = self.oom.pop();
        let what = what.to_string();
        async move {
            if let Some(e) = oom.await {
                bail!("the GPU ran out of memory {what}: {e}");
            }
            if let Some(e) = validation.await {
                bail!("GPU validation error {what}: {e}");
            }
            Ok(())
        }
    }
}
