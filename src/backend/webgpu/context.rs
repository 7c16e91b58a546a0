//! Adapter and device acquisition, what the adapter says about itself, and the device's
//! failure state (uncaptured errors and device loss are recorded, never panicked on).

use std::sync::{Arc, Mutex};

use anyhow::{anyhow, bail, Result};
use serde::Serialize;

use super::buffers::{GpuDevice, MemoryLimits};
use super::kernels::{Activations, Kernels};
#[cfg(not(target_arch = "wasm32"))]
use super::matrix_units::{kernels_on_units, MatrixUnits};

/// Options for opening the GPU.
#[derive(Debug, Clone, Default)]
pub struct GpuOptions {
    /// Behave as if no adapter existed, with this reason (tests of the CPU fallback;
    /// natively also set by the environment variable `SR_BENCH_NO_GPU`).
    pub disable: Option<String>,
    /// Requests at most this many bytes per buffer (`maxBufferSize` and
    /// `maxStorageBufferBindingSize` lowered below the adapter's: tests of the refusal).
    pub max_buffer_bytes: Option<u64>,
    /// Refuse a model whose buffers would take more than this many bytes in all (WebGPU does
    /// not report a device's memory size; natively `SR_BENCH_GPU_MEMORY_MB`).
    pub memory_budget: Option<u64>,
    /// Plain kernels even where the adapter offers optional features (`subgroups`,
    /// `shader-f16`): the tests run both ways; natively `SR_BENCH_GPU_PLAIN=1`.
    pub plain_kernels: bool,
    /// wgpu's runtime checks (index clamps, loop bounding) in the matmul too, which natively
    /// runs without them as it masks its own edges (the browser always checks); natively
    /// `SR_BENCH_GPU_CHECKED=1`.
    pub checked_kernels: bool,
    /// f32 activations even where the adapter offers `shader-f16` (only that feature off;
    /// natively `SR_BENCH_GPU_F16=0`).
    pub no_f16: bool,
    /// The tiled matmul even where the adapter offers matrix units (wgpu's cooperative
    /// matrices, natively; see `matrix_units.rs`); natively `SR_BENCH_GPU_COOP=0`.
    pub no_matrix_units: bool,
    /// One batch at a time instead of two in flight (the overlap's benchmark and test;
    /// natively `SR_BENCH_GPU_IN_FLIGHT=1`).
    pub one_batch_in_flight: bool,
    /// Timestamp queries where the adapter offers them (the kernel benchmark's per-dispatch
    /// GPU times, natively).
    #[cfg(all(feature = "bench", not(target_arch = "wasm32")))]
    pub timestamps: bool,
}

impl GpuOptions {
    /// Natively: `SR_BENCH_NO_GPU=<anything>` disables the GPU, `SR_BENCH_GPU_MEMORY_MB=<n>`
    /// sets the memory budget. In the browser: defaults.
    pub fn from_env() -> Self {
        #[allow(unused_mut)]
        let mut options = Self::default();
        #[cfg(not(target_arch = "wasm32"))]
        {
            if std::env::var_os("SR_BENCH_NO_GPU").is_some() {
                options.disable = Some("no WebGPU adapter: disabled by SR_BENCH_NO_GPU".into());
            }
            options.memory_budget = std::env::var("SR_BENCH_GPU_MEMORY_MB")
                .ok()
                .and_then(|mb| mb.trim().parse::<u64>().ok())
                .map(|mb| mb * 1_000_000);
            options.plain_kernels = std::env::var("SR_BENCH_GPU_PLAIN").is_ok_and(|v| v == "1");
            options.no_f16 = std::env::var("SR_BENCH_GPU_F16").is_ok_and(|v| v.trim() == "0");
            options.checked_kernels =
                std::env::var("SR_BENCH_GPU_CHECKED").is_ok_and(|v| v.trim() == "1");
            options.no_matrix_units =
                std::env::var("SR_BENCH_GPU_COOP").is_ok_and(|v| v.trim() == "0");
            options.one_batch_in_flight =
                std::env::var("SR_BENCH_GPU_IN_FLIGHT").is_ok_and(|n| n.trim() == "1");
        }
        options
    }
}

/// The adapter in words, for users.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct AdapterSummary {
    /// e.g. "llvmpipe (LLVM 15.0.6, 256 bits)", "SwiftShader Device (Subzero)".
    pub name: String,
    /// "vulkan", "metal", "dx12", "browser_webgpu", …
    pub backend: String,
    /// "discrete_gpu", "integrated_gpu", "cpu", "virtual_gpu", "other".
    pub device_type: String,
    pub driver: String,
    /// A software rasteriser (device type CPU, or the browser's `isFallbackAdapter`): the
    /// "GPU" runs on the CPU, so its speed says nothing about a real GPU.
    pub software: bool,
    /// The optional WebGPU features the kernels could use that the adapter offers:
    /// "shader-f16", "subgroups", natively "cooperative-matrix" (wgpu's experimental matrix
    /// units; used by the matmul with 16 × 16 f16 blocks and subgroups of 32 only).
    pub features: Vec<String>,
    /// Those of `features` the kernels use (requested on the device; not when refused by
    /// `GpuOptions`): "shader-f16" (f16 activations), "subgroups" (reductions),
    /// "cooperative-matrix" (the matmul on matrix units, once it passed its self-check).
    pub features_used: Vec<String>,
}

impl AdapterSummary {
    fn new(info: &wgpu::AdapterInfo, features: wgpu::Features) -> Self {
        let device_type = match info.device_type {
            wgpu::DeviceType::DiscreteGpu => "discrete_gpu",
            wgpu::DeviceType::IntegratedGpu => "integrated_gpu",
            wgpu::DeviceType::VirtualGpu => "virtual_gpu",
            wgpu::DeviceType::Cpu => "cpu",
            wgpu::DeviceType::Other => "other",
        };
        // Browsers may withhold the description (Chromium does for SwiftShader).
        let name = if info.name.is_empty() {
            "unnamed adapter (the browser gives no description)".to_string()
        } else {
            info.name.clone()
        };
        Self {
            name,
            backend: info.backend.to_str().to_string(),
            device_type: device_type.into(),
            driver: info.driver.clone(),
            software: info.device_type == wgpu::DeviceType::Cpu,
            features: feature_names(features),
            features_used: Vec::new(),
        }
    }

    /// One line for users: name, backend, and a CPU-emulation warning for software adapters.
    pub fn describe(&self) -> String {
        let mut s = format!("{} ({}, {})", self.name, self.backend, self.device_type);
        if self.software {
            s.push_str(
                ": a software fallback adapter — the GPU kernels run on the CPU (CPU emulation)",
            );
        }
        s
    }
}

/// The names of the optional features the kernels can use among `features`.
fn feature_names(features: wgpu::Features) -> Vec<String> {
    [
        (wgpu::Features::SHADER_F16, "shader-f16"),
        (wgpu::Features::SUBGROUP, "subgroups"),
        (
            wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX,
            "cooperative-matrix",
        ),
    ]
    .into_iter()
    .filter(|(f, _)| features.contains(*f))
    .map(|(_, name)| name.to_string())
    .collect()
}

/// An open WebGPU device with the compiled kernels.
pub struct GpuContext {
    pub(crate) device: GpuDevice,
    pub(crate) queue: wgpu::Queue,
    pub(crate) kernels: Kernels,
    pub(crate) limits: wgpu::Limits,
    /// Batches submitted before the oldest is read back (2, or 1 when asked).
    pub(crate) in_flight: usize,
    /// The reductions (LayerNorm, pooling, softmax) use subgroup operations (the device has the `subgroups` feature).
    pub subgroups: bool,
    /// Activations are stored as f16 (the device has the `shader-f16` feature).
    pub f16: bool,
    /// The matmul runs on these matrix units (natively, after its self-check).
    #[cfg(not(target_arch = "wasm32"))]
    pub(crate) matrix_units: Option<MatrixUnits>,
    /// The device has timestamp queries (asked for with `GpuOptions::timestamps`).
    #[cfg(all(feature = "bench", not(target_arch = "wasm32")))]
    pub(crate) timestamps: bool,
    pub adapter: AdapterSummary,
    failure: Arc<Mutex<Option<String>>>,
}

impl GpuContext {
    /// Requests an adapter (high performance) and a device, compiles the kernels. Errors say
    /// why there is no GPU (WebGPU missing, no adapter, device request refused).
    pub async fn new(options: &GpuOptions) -> Result<Self> {
        if let Some(reason) = &options.disable {
            bail!("{reason}");
        }
        #[cfg(target_arch = "wasm32")]
        if !wgpu::util::is_browser_webgpu_supported().await {
            bail!(
                "WebGPU is not available in this browser (navigator.gpu is missing or gives no \
                 adapter; headless Chromium needs --enable-unsafe-webgpu)"
            );
        }
        // Vulkan, Metal, DX12 or the browser's WebGPU (not GL: compute needs the first-class
        // backends); WGPU_BACKEND and the other wgpu variables still override.
        let descriptor = wgpu::InstanceDescriptor {
            backends: wgpu::Backends::PRIMARY,
            ..wgpu::InstanceDescriptor::new_without_display_handle()
        };
        let instance = wgpu::Instance::new(descriptor.with_env());
        let adapter = instance
            .request_adapter(&wgpu::RequestAdapterOptions {
                power_preference: wgpu::PowerPreference::HighPerformance,
                ..Default::default()
            })
            .await
            .map_err(|e| anyhow!("no WebGPU adapter: {e}"))?;
        let info = adapter.get_info();
        let available = adapter.limits();
        // The WebGPU defaults, with the largest buffers the adapter allows (the FFN
        // activations of a 32-sentence batch of 256 tokens take 50 MB).
        let cap = options.max_buffer_bytes.unwrap_or(u64::MAX);
        let limits = wgpu::Limits {
            max_storage_buffer_binding_size: available.max_storage_buffer_binding_size.min(cap),
            max_buffer_size: available.max_buffer_size.min(cap),
            ..wgpu::Limits::default()
        };
        // Subgroups for the reductions, f16 for the activations, when the adapter has them
        // (and they are not refused).
        let offered = adapter.features();
        let subgroups = !options.plain_kernels && offered.contains(wgpu::Features::SUBGROUP);
        let f16 = !options.plain_kernels
            && !options.no_f16
            && offered.contains(wgpu::Features::SHADER_F16);
        let mut features = wgpu::Features::empty();
        features.set(wgpu::Features::SUBGROUP, subgroups);
        features.set(wgpu::Features::SHADER_F16, f16);
        // Matrix units take f16 operands in subgroups: with both features only.
        #[cfg(not(target_arch = "wasm32"))]
        let units = (f16 && subgroups && !options.no_matrix_units)
            .then(|| MatrixUnits::offered(&adapter))
            .flatten();
        #[cfg(target_arch = "wasm32")]
        let units: Option<()> = None;
        features.set(
            wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX,
            units.is_some(),
        );
        #[cfg(all(feature = "bench", not(target_arch = "wasm32")))]
        let timestamps = options.timestamps && offered.contains(wgpu::Features::TIMESTAMP_QUERY);
        #[cfg(all(feature = "bench", not(target_arch = "wasm32")))]
        features.set(wgpu::Features::TIMESTAMP_QUERY, timestamps);
        let experimental_features = if units.is_some() {
            // SAFETY: wgpu's experimental cooperative matrices may hold bugs of wgpu's own;
            // the matmul on them is used only after it matched the tiled matmul on this
            // device (`kernels_on_units`), else the feature stays unused.
            unsafe { wgpu::ExperimentalFeatures::enabled() }
        } else {
            wgpu::ExperimentalFeatures::disabled()
        };
        let (device, queue) = adapter
            .request_device(&wgpu::DeviceDescriptor {
                label: Some("sr-bench"),
                required_features: features,
                required_limits: limits.clone(),
                experimental_features,
                ..Default::default()
            })
            .await
            .map_err(|e| anyhow!("the WebGPU device request failed: {e}"))?;
        let failure = Arc::new(Mutex::new(None::<String>));
        let on_error = failure.clone();
        device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
            on_error
                .lock()
                .unwrap()
                .get_or_insert_with(|| format!("GPU error: {e}"));
        }));
        let on_lost = failure.clone();
        device.set_device_lost_callback(move |reason, message| {
            on_lost
                .lock()
                .unwrap()
                .get_or_insert_with(|| format!("the GPU device was lost ({reason:?}): {message}"));
        });
        let memory_limits = MemoryLimits {
            max_buffer_size: limits.max_buffer_size,
            max_storage_binding: limits.max_storage_buffer_binding_size,
            budget: options.memory_budget,
        };
        let device = GpuDevice::new(device, memory_limits);
        let trusted_matmul = !options.checked_kernels;
        let act = Self::activations_of(f16);
        let kernels = Kernels::new(&device, subgroups, act, trusted_matmul);
        #[cfg(not(target_arch = "wasm32"))]
        let (kernels, matrix_units) = match units {
            Some(u) => {
                let before = device.memory();
                let checked =
                    kernels_on_units(&device, &queue, &kernels, (u, act, trusted_matmul)).await;
                // The self-check's buffers are gone: out of the memory report.
                drop(device.hold(device.memory().since(&before)));
                match checked {
                    Ok(on_units) => (on_units, Some(u)),
                    Err(e) => {
                        eprintln!("sr-bench: {e:#}; the tiled matmul is used");
                        (kernels, None)
                    }
                }
            }
            None => (kernels, None),
        };
        #[cfg(not(target_arch = "wasm32"))]
        features.set(
            wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX,
            matrix_units.is_some(),
        );
        Ok(Self {
            device,
            queue,
            kernels,
            limits,
            adapter: AdapterSummary {
                features_used: feature_names(features),
                ..AdapterSummary::new(&info, offered)
            },
            in_flight: if options.one_batch_in_flight { 1 } else { 2 },
            subgroups,
            f16,
            #[cfg(not(target_arch = "wasm32"))]
            matrix_units,
            #[cfg(all(feature = "bench", not(target_arch = "wasm32")))]
            timestamps,
            failure,
        })
    }

    fn activations_of(f16: bool) -> Activations {
        if f16 {
            Activations::F16
        } else {
            Activations::F32
        }
    }

    /// How the activations between kernels are stored.
    pub(crate) fn activations(&self) -> Activations {
        Self::activations_of(self.f16)
    }

    /// The matrix units the matmul runs on (natively, once they passed the self-check), in
    /// words.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn matrix_units(&self) -> Option<String> {
        self.matrix_units.map(MatrixUnits::describe)
    }

    /// Fails once the device is lost or reported an error outside an error scope.
    pub fn check(&self) -> Result<()> {
        match self.failure.lock().unwrap().as_ref() {
            Some(f) => bail!("{f}"),
            None => Ok(()),
        }
    }

    /// Natively: the bytes the driver's allocator holds for the buffers we created (wgpu's
    /// own internal buffers excluded), after freeing what was dropped — an independent count
    /// to compare [`super::GpuMemory`] with. `None` where the backend gives no report.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn allocated_buffer_bytes(&self) -> Option<(u64, usize)> {
        let _ = self.device.poll(wgpu::PollType::wait_indefinitely());
        let report = self.device.generate_allocator_report()?;
        let ours = report
            .allocations
            .iter()
            .filter(|a| !a.name.starts_with("(wgpu internal)"));
        Some(ours.fold((0, 0), |(bytes, n), a| (bytes + a.size, n + 1)))
    }

    /// Marks the device as lost, as the device-lost callback does (tests of the fallback).
    pub fn simulate_device_lost(&self) {
        self.failure
            .lock()
            .unwrap()
            .get_or_insert_with(|| "the GPU device was lost (simulated)".into());
    }
}
