//! AdamW as sentence-transformers' `fit` uses it (PyTorch's decoupled weight decay, bias
//! correction), with its moments in reach: a resumable run writes them to its checkpoint and
//! reads them back, which candle's own optimiser (moments private) does not allow.

use std::collections::BTreeMap;

use anyhow::{bail, Result};
use candle_core::backprop::GradStore;
use candle_core::{Tensor, Var};

const BETA1: f64 = 0.9;
const BETA2: f64 = 0.999;

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
                let zeros = var.as_tensor().zeros_like()?;
                Ok((
                    name.clone(),
                    Slot {
                        var: var.clone(),
                        weight_decay: weight_decay(name),
                        m: zeros.clone(),
                        v: zeros,
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

    /// One update of every weight that has a gradient in `grads`, at learning rate `lr`.
    pub fn step(&mut self, grads: &GradStore, lr: f64) -> Result<()> {
        self.steps += 1;
        let scale_m = 1.0 / (1.0 - BETA1.powi(self.steps as i32));
        let scale_v = 1.0 / (1.0 - BETA2.powi(self.steps as i32));
        for slot in self.slots.values_mut() {
            let Some(g) = grads.get(slot.var.as_tensor()) else {
                continue;
            };
            // Detached: the moments must not keep the step's autograd graph alive.
            let m = ((&slot.m * BETA1)? + (g * (1.0 - BETA1))?)?.detach();
            let v = ((&slot.v * BETA2)? + (g.sqr()? * (1.0 - BETA2))?)?.detach();
            let decayed = (slot.var.as_tensor() * (1.0 - lr * slot.weight_decay))?;
            let update = ((&m * scale_m)? / ((&v * scale_v)?.sqrt()? + self.eps)?)?;
            slot.var.set(&(decayed - (update * lr)?)?)?;
            slot.m = m;
            slot.v = v;
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
            slot.m = m.to_dtype(slot.var.dtype())?;
            slot.v = v.to_dtype(slot.var.dtype())?;
        }
        self.steps = steps;
        Ok(())
    }
}
