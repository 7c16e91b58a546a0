//! AdamW as sentence-transformers' `fit` uses it (PyTorch's decoupled weight decay, bias
//! correction, the gradients clipped to a joint norm first), with its moments in reach: a
//! resumable run writes them to its checkpoint and reads them back, which candle's own
//! optimiser (moments private) does not allow.
//!
//! The update runs in place, one pass per tensor (candle's in-place ops): written as tensor
//! expressions it made ~15 temporaries the size of each weight a step, 47 MB each for MiniLM's
//! token table, which the allocator handed back to the system and faulted in again — a sixth
//! of a training step.

use std::collections::BTreeMap;

use anyhow::{bail, Result};
use candle_core::backprop::GradStore;
use candle_core::{
    CpuStorage, CustomOp1, InplaceOp2, InplaceOp3, Layout, Shape, Tensor, Var, WithDType,
};
use rayon::prelude::*;

const BETA1: f64 = 0.9;
const BETA2: f64 = 0.999;
/// Elements per parallel task (a pass is memory-bound; small tensors stay on one thread).
const CHUNK: usize = 1 << 16;

/// One weight, its decay, and its first and second moments.
struct Slot {
    var: Var,
    weight_decay: f64,
    m: Tensor,
    v: Tensor,
}

/// AdamW over named weights, each with its own weight decay.
pub struct AdamW {
    slots: BTreeMap<String, Slot>,
    /// Updates made so far (the bias correction's t).
    steps: usize,
    eps: f64,
}

impl AdamW {
    /// Zero moments for every weight of `params`; `weight_decay(name)` gives its decay.
    pub fn new(
        params: &BTreeMap<String, Var>,
        eps: f64,
        weight_decay: impl Fn(&str) -> f64,
    ) -> Result<Self> {
        let slots = params
            .iter()
            .map(|(name, var)| {
                // Two tensors, not two handles of one: each is updated in place.
                let zeros = || var.as_tensor().zeros_like();
                Ok((
                    name.clone(),
                    Slot {
                        var: var.clone(),
                        weight_decay: weight_decay(name),
                        m: zeros()?,
                        v: zeros()?,
                    },
                ))
            })
            .collect::<Result<_>>()?;
        Ok(Self {
            slots,
            steps: 0,
            eps,
        })
    }

    /// One update of every weight that has a gradient in `grads`, at learning rate `lr`, the
    /// gradients scaled first so that their joint L2 norm is at most `max_norm` (PyTorch's
    /// `clip_grad_norm_`).
    pub fn step(&mut self, grads: &GradStore, lr: f64, max_norm: f64) -> Result<()> {
        let mut present = Vec::with_capacity(self.slots.len());
        let mut squared = 0.0;
        for slot in self.slots.values_mut() {
            if let Some(g) = grads.get(slot.var.as_tensor()) {
                let g = g.contiguous()?;
                squared += g.apply_op1_no_bwd(&SquaredNorm)?.to_scalar::<f64>()?;
                present.push((slot, g));
            }
        }
        let norm = squared.sqrt();
        let clip = if norm > max_norm {
            max_norm / (norm + 1e-6)
        } else {
            1.0
        };
        self.steps += 1;
        let update = |weight_decay| Update {
            lr,
            weight_decay,
            eps: self.eps,
            bias1: 1.0 - BETA1.powi(self.steps as i32),
            bias2: 1.0 - BETA2.powi(self.steps as i32),
        };
        for (slot, g) in present {
            slot.m.inplace_op2(
                &g,
                &Moment {
                    beta: BETA1,
                    clip,
                    squared: false,
                },
            )?;
            slot.v.inplace_op2(
                &g,
                &Moment {
                    beta: BETA2,
                    clip,
                    squared: true,
                },
            )?;
            slot.var
                .as_tensor()
                .inplace_op3(&slot.m, &slot.v, &update(slot.weight_decay))?;
        }
        Ok(())
    }

    /// Every weight's (first, second) moment by name, for a checkpoint.
    pub fn moments(&self) -> impl Iterator<Item = (&str, &Tensor, &Tensor)> {
        self.slots
            .iter()
            .map(|(name, s)| (name.as_str(), &s.m, &s.v))
    }

    /// Puts back the moments and the step count of a checkpoint: `moment(name)` gives a
    /// weight's (first, second) moment, which must have the weight's shape.
    pub fn restore(
        &mut self,
        steps: usize,
        mut moment: impl FnMut(&str) -> Result<(Tensor, Tensor)>,
    ) -> Result<()> {
        for (name, slot) in &mut self.slots {
            let (m, v) = moment(name)?;
            for t in [&m, &v] {
                if t.shape() != slot.var.shape() {
                    bail!(
                        "the moment of '{name}' has shape {:?}, the weight {:?}",
                        t.dims(),
                        slot.var.dims()
                    );
                }
            }
            // Copies: the moments are updated in place and must own their storage.
            slot.m = m.to_dtype(slot.var.dtype())?.copy()?;
            slot.v = v.to_dtype(slot.var.dtype())?.copy()?;
        }
        self.steps = steps;
        Ok(())
    }
}

/// The contiguous elements `layout` covers.
fn elements<'a, T>(data: &'a [T], layout: &Layout) -> candle_core::Result<&'a [T]> {
    match layout.contiguous_offsets() {
        Some((start, end)) => Ok(&data[start..end]),
        None => candle_core::bail!("AdamW works on contiguous tensors"),
    }
}

fn elements_mut<'a, T>(data: &'a mut [T], layout: &Layout) -> candle_core::Result<&'a mut [T]> {
    match layout.contiguous_offsets() {
        Some((start, end)) => Ok(&mut data[start..end]),
        None => candle_core::bail!("AdamW works on contiguous tensors"),
    }
}

/// The sum of the squared elements, as an f64 scalar (the gradient's share of the norm),
/// without a squared copy of the gradient.
struct SquaredNorm;

impl CustomOp1 for SquaredNorm {
    fn name(&self) -> &'static str {
        "adamw-squared-norm"
    }

    fn cpu_fwd(&self, s: &CpuStorage, l: &Layout) -> candle_core::Result<(CpuStorage, Shape)> {
        fn sum<T: WithDType>(x: &[T]) -> f64 {
            x.par_chunks(CHUNK)
                .map(|c| c.iter().map(|&x| x.to_f64() * x.to_f64()).sum::<f64>())
                .sum()
        }
        let total = match s {
            CpuStorage::F32(x) => sum(elements(x, l)?),
            CpuStorage::F64(x) => sum(elements(x, l)?),
            _ => candle_core::bail!("AdamW trains f32 or f64 weights"),
        };
        Ok((CpuStorage::F64(vec![total]), Shape::from(())))
    }
}

/// A moment, in place: `m ← β·m + (1 − β)·g'`, with `g'` the clipped gradient (`squared`: its
/// square, the second moment).
struct Moment {
    beta: f64,
    clip: f64,
    squared: bool,
}

impl Moment {
    fn run<T: WithDType>(&self, m: &mut [T], g: &[T]) {
        m.par_chunks_mut(CHUNK)
            .zip(g.par_chunks(CHUNK))
            .for_each(|(m, g)| {
                for (m, &g) in m.iter_mut().zip(g) {
                    let g = g.to_f64() * self.clip;
                    let g = if self.squared { g * g } else { g };
                    *m = T::from_f64(self.beta * m.to_f64() + (1.0 - self.beta) * g);
                }
            });
    }
}

impl InplaceOp2 for Moment {
    fn name(&self) -> &'static str {
        "adamw-moment"
    }

    fn cpu_fwd(
        &self,
        dst: &mut CpuStorage,
        dst_l: &Layout,
        g: &CpuStorage,
        g_l: &Layout,
    ) -> candle_core::Result<()> {
        if dst_l.shape() != g_l.shape() {
            candle_core::bail!("AdamW: a moment and its gradient of different shapes");
        }
        match (dst, g) {
            (CpuStorage::F32(m), CpuStorage::F32(g)) => {
                self.run(elements_mut(m, dst_l)?, elements(g, g_l)?)
            }
            (CpuStorage::F64(m), CpuStorage::F64(g)) => {
                self.run(elements_mut(m, dst_l)?, elements(g, g_l)?)
            }
            _ => candle_core::bail!("AdamW: a moment and its gradient of one dtype, f32 or f64"),
        }
        Ok(())
    }
}

/// The weight, in place: decayed, then moved by the bias-corrected moments.
struct Update {
    lr: f64,
    weight_decay: f64,
    eps: f64,
    bias1: f64,
    bias2: f64,
}

impl Update {
    fn run<T: WithDType>(&self, w: &mut [T], m: &[T], v: &[T]) {
        let decay = 1.0 - self.lr * self.weight_decay;
        w.par_chunks_mut(CHUNK)
            .zip(m.par_chunks(CHUNK).zip(v.par_chunks(CHUNK)))
            .for_each(|(w, (m, v))| {
                for ((w, &m), &v) in w.iter_mut().zip(m).zip(v) {
                    let step =
                        (m.to_f64() / self.bias1) / ((v.to_f64() / self.bias2).sqrt() + self.eps);
                    *w = T::from_f64(w.to_f64() * decay - self.lr * step);
                }
            });
    }
}

impl InplaceOp3 for Update {
    fn name(&self) -> &'static str {
        "adamw-update"
    }

    fn cpu_fwd(
        &self,
        dst: &mut CpuStorage,
        dst_l: &Layout,
        m: &CpuStorage,
        m_l: &Layout,
        v: &CpuStorage,
        v_l: &Layout,
    ) -> candle_core::Result<()> {
        if dst_l.shape() != m_l.shape() || dst_l.shape() != v_l.shape() {
            candle_core::bail!("AdamW: a weight and its moments of different shapes");
        }
        match (dst, m, v) {
            (CpuStorage::F32(w), CpuStorage::F32(m), CpuStorage::F32(v)) => self.run(
                elements_mut(w, dst_l)?,
                elements(m, m_l)?,
                elements(v, v_l)?,
            ),
            (CpuStorage::F64(w), CpuStorage::F64(m), CpuStorage::F64(v)) => self.run(
                elements_mut(w, dst_l)?,
                elements(m, m_l)?,
                elements(v, v_l)?,
            ),
            _ => candle_core::bail!("AdamW: a weight and its moments of one dtype, f32 or f64"),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::{DType, Device};

    /// AdamW written out as tensor expressions (the textbook form the in-place passes replace).
    fn reference(
        w: &Tensor,
        g: &Tensor,
        (m, v): (&Tensor, &Tensor),
        (lr, decay, eps, t): (f64, f64, f64, i32),
    ) -> (Tensor, Tensor, Tensor) {
        let m = ((m * BETA1).unwrap() + (g * (1.0 - BETA1)).unwrap()).unwrap();
        let v = ((v * BETA2).unwrap() + (g.sqr().unwrap() * (1.0 - BETA2)).unwrap()).unwrap();
        let mh = (&m / (1.0 - BETA1.powi(t))).unwrap();
        let vh = (&v / (1.0 - BETA2.powi(t))).unwrap();
        let step = (mh / (vh.sqrt().unwrap() + eps).unwrap()).unwrap();
        let w = ((w * (1.0 - lr * decay)).unwrap() - (step * lr).unwrap()).unwrap();
        (w, m, v)
    }

    fn max_diff(a: &Tensor, b: &Tensor) -> f64 {
        (a - b)
            .unwrap()
            .abs()
            .unwrap()
            .max_all()
            .unwrap()
            .to_scalar::<f64>()
            .unwrap()
    }

    #[test]
    fn the_in_place_passes_equal_adamw_written_out_with_clipping() {
        let dev = Device::Cpu;
        let init = |seed: f64, shape: (usize, usize)| {
            let n = shape.0 * shape.1;
            let x: Vec<f64> = (0..n).map(|i| ((i as f64 + seed) * 0.37).sin()).collect();
            Tensor::from_vec(x, shape, &dev).unwrap()
        };
        let params: BTreeMap<String, Var> = [("a.weight", (3, 5)), ("a.bias", (1, 5))]
            .into_iter()
            .map(|(n, s)| (n.to_string(), Var::from_tensor(&init(1.0, s)).unwrap()))
            .collect();
        let decay = |n: &str| if n.ends_with(".bias") { 0.0 } else { 0.01 };
        let mut opt = AdamW::new(&params, 1e-6, decay).unwrap();
        let mut expected: BTreeMap<String, (Tensor, Tensor, Tensor)> = params
            .iter()
            .map(|(n, v)| {
                let w = v.as_tensor().copy().unwrap();
                let z = w.zeros_like().unwrap();
                (n.clone(), (w, z.clone(), z))
            })
            .collect();
        // Gradients of norm ~3 (clipped to 1) and of ~0.03 (left alone).
        for (t, (scale, max_norm)) in [(1.0, 1.0), (0.01, 1.0), (1.0, 1.0)].iter().enumerate() {
            let loss = params
                .values()
                .enumerate()
                .map(|(i, v)| {
                    let target = init(9.0 + i as f64 + t as f64, v.as_tensor().dims2().unwrap());
                    (v.as_tensor() * (target * *scale).unwrap())
                        .unwrap()
                        .sum_all()
                        .unwrap()
                })
                .reduce(|a, b| (a + b).unwrap())
                .unwrap();
            let grads = loss.backward().unwrap();
            let norm: f64 = params
                .values()
                .map(|v| {
                    grads
                        .get(v.as_tensor())
                        .unwrap()
                        .sqr()
                        .unwrap()
                        .sum_all()
                        .unwrap()
                })
                .map(|s| s.to_scalar::<f64>().unwrap())
                .sum::<f64>()
                .sqrt();
            let clip = if norm > *max_norm {
                max_norm / (norm + 1e-6)
            } else {
                1.0
            };
            assert_eq!(clip < 1.0, *scale == 1.0, "the test covers both branches");
            let lr = 2e-5 * (t + 1) as f64;
            for (name, var) in &params {
                let g = (grads.get(var.as_tensor()).unwrap() * clip).unwrap();
                let (w, m, v) = &expected[name];
                let next = reference(w, &g, (m, v), (lr, decay(name), 1e-6, t as i32 + 1));
                expected.insert(name.clone(), next);
            }
            opt.step(&grads, lr, *max_norm).unwrap();
        }
        for ((name, var), (_, m, v)) in params.iter().zip(opt.moments()) {
            let (w_ref, m_ref, v_ref) = &expected[name];
            for (got, want) in [(var.as_tensor(), w_ref), (m, m_ref), (v, v_ref)] {
                assert_eq!(got.dtype(), DType::F64);
                assert!(
                    max_diff(got, want) < 1e-15,
                    "{name}: {}",
                    max_diff(got, want)
                );
            }
        }
    }
}
