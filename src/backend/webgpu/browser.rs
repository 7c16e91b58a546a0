//! The browser's own description of its WebGPU adapter (`GPUAdapterInfo`), which wgpu does not
//! pass on in wasm.

use js_sys::{Function, Promise, Reflect};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

use super::BrowserAdapterInfo;

fn get(target: &JsValue, key: &str) -> Option<JsValue> {
    Reflect::get(target, &JsValue::from_str(key))
        .ok()
        .filter(|v| !v.is_undefined() && !v.is_null())
}

/// `navigator.gpu.requestAdapter().info`, or `None` when the browser gives none. Only a
/// description: never a reason to fail.
pub async fn adapter_info() -> Option<BrowserAdapterInfo> {
    let gpu = get(&get(&js_sys::global(), "navigator")?, "gpu")?;
    let request: Function = get(&gpu, "requestAdapter")?.dyn_into().ok()?;
    let promise: Promise = request.call0(&gpu).ok()?.dyn_into().ok()?;
    let adapter = JsFuture::from(promise).await.ok()?;
    let info = get(&adapter, "info")?;
    let field = |key: &str| {
        get(&info, key)
            .and_then(|v| v.as_string())
            .unwrap_or_default()
    };
    Some(BrowserAdapterInfo {
        vendor: field("vendor"),
        architecture: field("architecture"),
        device: field("device"),
        description: field("description"),
    })
}
