//! Asynchronous readback of a MAP_READ buffer: never blocks in the browser.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use anyhow::{anyhow, Result};

use crate::backend::webgpu::kernels::Activations;

/// Resolves when a `map_async` callback fires (natively after `device.poll`, in the browser
/// when the JS promise settles).
struct MapFuture {
    state: Arc<Mutex<MapState>>,
}

#[derive(Default)]
struct MapState {
    result: Option<std::result::Result<(), wgpu::BufferAsyncError>>,
    waker: Option<Waker>,
}

impl Future for MapFuture {
    type Output = std::result::Result<(), wgpu::BufferAsyncError>;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut state = self.state.lock().unwrap();
        match state.result.take() {
            Some(r) => Poll::Ready(r),
            None => {
                state.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

/// Reads the first `len` f32 values of a MAP_READ buffer once submission `after` is done
/// (`None`: all the work submitted so far). Never blocks in the browser; natively it waits in
/// `device.poll` for that submission only, so a later one keeps the GPU busy meanwhile.
pub(crate) async fn read_f32(
    device: &wgpu::Device,
    buffer: &wgpu::Buffer,
    len: usize,
    after: Option<wgpu::SubmissionIndex>,
) -> Result<Vec<f32>> {
    read_values(device, buffer, (len, Activations::F32), after).await
}

/// [`read_f32`] for `len` values stored as `stored` (f32 or f16).
pub(crate) async fn read_values(
    device: &wgpu::Device,
    buffer: &wgpu::Buffer,
    (len, stored): (usize, Activations),
    after: Option<wgpu::SubmissionIndex>,
) -> Result<Vec<f32>> {
    let bytes = ((len.max(1) * stored.bytes()).next_multiple_of(4)) as u64;
    let state = Arc::new(Mutex::new(MapState::default()));
    let callback_state = state.clone();
    buffer
        .slice(..bytes)
        .map_async(wgpu::MapMode::Read, move |result| {
            let mut s = callback_state.lock().unwrap();
            s.result = Some(result);
            if let Some(w) = s.waker.take() {
                w.wake();
            }
        });
    #[cfg(not(target_arch = "wasm32"))]
    device
        .poll(wgpu::PollType::Wait {
            submission_index: after,
            timeout: None,
        })
        .map_err(|e| anyhow!("waiting for the GPU failed: {e}"))?;
    #[cfg(target_arch = "wasm32")]
    let _ = (device, after);
    MapFuture { state }
        .await
        .map_err(|e| anyhow!("reading results back from the GPU failed: {e}"))?;
    let out = {
        let view = buffer
            .slice(..bytes)
            .get_mapped_range()
            .map_err(|e| anyhow!("reading results back from the GPU failed: {e:?}"))?;
        let mut values = stored.decode(&view);
        values.truncate(len);
        values
    };
    buffer.unmap();
    Ok(out)
}
