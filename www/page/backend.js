// @ts-check
// The backend picker (CPU | WebGPU | Auto) and "Running on:", from `Model.backend_status()`.

import { adapterLabel } from './adapter-label.js';
import { $, el, setMessage } from './ui.js';

/** @typedef {import('./state.js').PageState} PageState */

export const BACKENDS = ['cpu', 'webgpu', 'auto'];

/** The backend picker's radio buttons. @returns {NodeListOf<HTMLInputElement>} */
const backendInputs = () => document.querySelectorAll('input[name="backend"]');
/** @param {string} choice @returns {HTMLInputElement} */
const backendInput = (choice) => document.querySelector(`input[name="backend"][value="${choice}"]`);
const hasWebGpuApi = () => typeof navigator !== 'undefined' && 'gpu' in navigator;

/** Whether the page offers this backend (a known name whose choice is not disabled). */
export function backendOffered(choice) {
  return BACKENDS.includes(choice) && !backendInput(choice).disabled;
}

/**
 * Offers WebGPU where the browser has it (else disables it, saying why), selects the link's
 * backend (`wanted`) or the CPU, and calls `onChange(choice)` when the user picks another.
 */
/** @param {PageState} state */
export function setupBackend(state, wanted, onChange) {
  const webgpu = backendInput('webgpu');
  const tag = $('webgpu-tag');
  if (hasWebGpuApi()) {
    $('webgpu-choice').title = 'Runs the encoder as WebGPU compute kernels; falls back to the CPU if the GPU cannot be used';
  } else {
    webgpu.disabled = true;
    const why = window.isSecureContext ? 'This browser has no WebGPU.' : 'WebGPU needs a secure context (https or localhost).';
    $('webgpu-choice').title = why;
    webgpu.title = why;
    tag.hidden = false;
    tag.textContent = 'not available';
  }
  let choice = BACKENDS.includes(wanted) ? wanted : 'cpu';
  if (wanted && !BACKENDS.includes(wanted)) {
    setMessage($('model-status'), `The link asks for an unknown backend “${wanted}”: using the CPU.`, 'warning');
  } else if (choice === 'webgpu' && webgpu.disabled) {
    setMessage($('model-status'), 'The link asks for WebGPU, which this browser does not have: using the CPU.', 'warning');
    choice = 'cpu';
  }
  selectBackend(state, choice);
  for (const r of backendInputs()) {
    r.addEventListener('change', () => {
      if (!r.checked) return;
      selectBackend(state, r.value);
      onChange(r.value);
    });
  }
}

/** @param {PageState} state */
export function selectBackend(state, choice) {
  state.backend = choice;
  for (const r of backendInputs()) r.checked = r.value === choice;
  if (!state.loaded) {
    $('active-backend').textContent = { cpu: 'CPU · WebAssembly', webgpu: 'WebGPU (once a model is loaded)', auto: 'Auto: WebGPU if available, else the CPU (once a model is loaded)' }[choice];
  }
}

/** Shows where the model runs (`Model.backend_status()`): active backend, adapter, software
 * adapter and CPU fallback warnings, and the backend's notices. */
export function renderBackend(status) {
  if (!status) return;
  const active = $('active-backend');
  const onGpu = status.active === 'webgpu';
  active.dataset.active = status.active;
  active.dataset.requested = status.requested;
  const adapterName = adapterLabel(status.adapter);
  active.textContent = onGpu
    ? `WebGPU · ${adapterName}${status.software_adapter ? ' (software)' : ''}`
    : `CPU · WebAssembly${status.requested !== 'cpu' ? ' (WebGPU not used)' : ''}`;

  const software = $('backend-software');
  software.hidden = !(status.software_adapter && onGpu);
  software.textContent = software.hidden ? '' :
    `The WebGPU adapter “${adapterName}” is a software fallback (e.g. SwiftShader): the GPU is emulated ` +
    'on the CPU, so it is likely slower than the CPU (WebAssembly) backend, and its speed says nothing about a real GPU.';

  const fallback = $('backend-fallback');
  fallback.hidden = !(status.fallback_reason && status.active === 'cpu');
  fallback.textContent = fallback.hidden ? '' : `WebGPU is not used: ${status.fallback_reason}.`;

  const list = $('backend-notices');
  // The fallback reason is also a notice: shown once, above.
  const notices = (Array.isArray(status.notices) ? status.notices : []).filter((n) => fallback.hidden || n !== status.fallback_reason);
  list.replaceChildren(...notices.map((n) => el('li', {}, n)));
  list.hidden = notices.length === 0;
}
