//! Layer norm as one differentiable op: the forward one pass over the rows, the backward one
//! pass giving the input's gradient and the weight's and bias's (sums over rows) together.

use candle_core::{CpuStorage, CustomOp3, Layout, Result, Shape, Tensor};
use rayon::prelude::*;

use super::{dispatch, rows, Float, Kernel};

/// Layer norm over the last dimension of `x` (`[rows, hidden]`): `(x − mean) / √(var + eps)`,
/// times `weight`, plus `bias`; differentiable in all three.
pub fn layer_norm(x: &Tensor, weight: &Tensor, bias: &Tensor, eps: f64) -> Result<Tensor> {
    x.apply_op3(weight, bias, LayerNorm { eps })
}

struct LayerNorm {
    eps: f64,
}

/// A row's mean and 1/standard deviation (f64 sums; the variance divides by `hidden`).
fn moments<T: Float>(row: &[T], eps: f64) -> (f64, f64) {
    let n = row.len() as f64;
    let mean = row.iter().map(|v| v.to_f64()).sum::<f64>() / n;
    let var = row.iter().map(|v| (v.to_f64() - mean).powi(2)).sum::<f64>() / n;
    (mean, 1.0 / (var + eps).sqrt())
}

impl LayerNorm {
    fn forward<T: Float>(&self, x: &[T], w: &[T], b: &[T]) -> Vec<T> {
        let h = w.len();
        let mut out = vec![T::zero(); x.len()];
        out.par_chunks_mut(rows(h))
            .zip(x.par_chunks(rows(h)))
            .for_each(|(out, x)| {
                for (o, x) in out.chunks_mut(h).zip(x.chunks(h)) {
                    let (mean, inv) = moments(x, self.eps);
                    for (((o, &x), &w), &b) in o.iter_mut().zip(x).zip(w).zip(b) {
                        let y = (x.to_f64() - mean) * inv * w.to_f64() + b.to_f64();
                        *o = T::from_f64(y);
                    }
                }
            });
        out
    }

    /// dx (`[rows, hidden]`), then the weight's and the bias's gradients as two more rows:
    /// dx = inv · (g·w − mean(g·w) − x̂ · mean(g·w·x̂)), dw = Σ g·x̂, db = Σ g.
    fn backward<T: Float>(&self, x: &[T], w: &[T], g: &[T]) -> Vec<T> {
        let h = w.len();
        let mut out = vec![T::zero(); x.len() + 2 * h];
        let (dx, tail) = out.split_at_mut(x.len());
        let (dw, db) = dx
            .par_chunks_mut(rows(h))
            .zip(x.par_chunks(rows(h)).zip(g.par_chunks(rows(h))))
            .map(|(dx, (x, g))| {
                let (mut dw, mut db) = (vec![0.0; h], vec![0.0; h]);
                for ((dx, x), g) in dx.chunks_mut(h).zip(x.chunks(h)).zip(g.chunks(h)) {
                    let (mean, inv) = moments(x, self.eps);
                    let (mut mean_gw, mut mean_gwx) = (0.0, 0.0);
                    for ((&x, &g), &w) in x.iter().zip(g).zip(w) {
                        let (xhat, g) = ((x.to_f64() - mean) * inv, g.to_f64());
                        mean_gw += g * w.to_f64();
                        mean_gwx += g * w.to_f64() * xhat;
                    }
                    mean_gw /= h as f64;
                    mean_gwx /= h as f64;
                    for (j, ((dx, &x), &g)) in dx.iter_mut().zip(x).zip(g).enumerate() {
                        let (xhat, g) = ((x.to_f64() - mean) * inv, g.to_f64());
                        dw[j] += g * xhat;
                        db[j] += g;
                        *dx = T::from_f64(inv * (g * w[j].to_f64() - mean_gw - xhat * mean_gwx));
                    }
                }
                (dw, db)
            })
            .reduce(
                || (vec![0.0; h], vec![0.0; h]),
                |(mut a, mut b), (c, d)| {
                    a.iter_mut().zip(&c).for_each(|(a, c)| *a += c);
                    b.iter_mut().zip(&d).for_each(|(b, d)| *b += d);
                    (a, b)
                },
            );
        for (t, v) in tail.iter_mut().zip(dw.iter().chain(&db)) {
            *t = T::from_f64(*v);
        }
        out
    }
}

/// Checks a layer norm's inputs: `[rows, hidden]`, a `[hidden]` weight, and `[rows, hidden]`
/// or `[hidden]` as the third (the bias, or the incoming gradient).
fn check(name: &str, xl: &Layout, wl: &Layout, third: &Layout) -> Result<()> {
    let h = wl.shape().elem_count();
    if wl.shape().rank() != 1
        || xl.shape().dims().last() != Some(&h)
        || third.shape().dims().last() != Some(&h)
    {
        candle_core::bail!("{name}: a weight and bias of the rows' width are expected");
    }
    Ok(())
}

impl Kernel<3> for LayerNorm {
    fn run<T: Float>(&self, [x, w, b]: [&[T]; 3]) -> Vec<T> {
        self.forward(x, w, b)
    }
}

impl CustomOp3 for LayerNorm {
    fn name(&self) -> &'static str {
        "train-layer-norm"
    }

    fn cpu_fwd(
        &self,
        xs: &CpuStorage,
        xl: &Layout,
        ws: &CpuStorage,
        wl: &Layout,
        bs: &CpuStorage,
        bl: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        check(self.name(), xl, wl, bl)?;
        let out = dispatch(self, self.name(), [(xs, xl), (ws, wl), (bs, bl)])?;
        Ok((out, xl.shape().clone()))
    }

    fn bwd(
        &self,
        x: &Tensor,
        w: &Tensor,
        _b: &Tensor,
        _res: &Tensor,
        grad: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
        let (rows, h) = x.dims2()?;
        let all = x.contiguous()?.apply_op3_no_bwd(
            &w.contiguous()?,
            &grad.contiguous()?,
            &LayerNormGrad { norm: self },
        )?;
        Ok((
            Some(all.narrow(0, 0, rows * h)?.reshape((rows, h))?),
            Some(all.narrow(0, rows * h, h)?),
            Some(all.narrow(0, rows * h + h, h)?),
        ))
    }
}

/// The backward pass of [`LayerNorm`] as one op over (x, weight, incoming gradient).
struct LayerNormGrad<'a> {
    norm: &'a LayerNorm,
}

impl Kernel<3> for LayerNormGrad<'_> {
    fn run<T: Float>(&self, [x, w, g]: [&[T]; 3]) -> Vec<T> {
        self.norm.backward(x, w, g)
    }
}

impl CustomOp3 for LayerNormGrad<'_> {
    fn name(&self) -> &'static str {
        "train-layer-norm-grad"
    }

    fn cpu_fwd(
        &self,
        xs: &CpuStorage,
        xl: &Layout,
        ws: &CpuStorage,
        wl: &Layout,
        gs: &CpuStorage,
        gl: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        check(self.name(), xl, wl, gl)?;
        let n = xl.shape().elem_count() + 2 * wl.shape().elem_count();
        let out = dispatch(self, self.name(), [(xs, xl), (ws, wl), (gs, gl)])?;
        Ok((out, Shape::from(n)))
    }
}
