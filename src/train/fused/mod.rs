//! The training encoder's element-wise steps as single differentiable candle ops, each with its
//! own backward pass: GELU, a bias added to every row, and layer norm. Written as tensor
//! expressions, autograd runs each through a dozen operations, each a pass over the activations
//! and a temporary, and candle sums a gradient over rows (a bias's, a norm's weight) in a
//! strided loop — 2 ms for one MiniLM batch's feed-forward bias alone (470 tokens × 1,536),
//! where the matrix product around it takes 3. Each forward here is one pass, each backward one
//! or two; the values are the expressions' (GELU with the same `erf` candle uses).

use candle_core::{CpuStorage, CustomOp1, CustomOp2, Layout, Result, Shape, Tensor, WithDType};
use rayon::prelude::*;

mod layer_norm;
pub use layer_norm::layer_norm;

/// Elements per parallel task.
const CHUNK: usize = 1 << 14;
/// 1/√(2π): the standard normal density's factor.
const FRAC_1_SQRT_2PI: f64 = 0.398_942_280_401_432_7;

/// `x · Φ(x)` of every element, differentiable.
pub fn gelu_erf(x: &Tensor) -> Result<Tensor> {
    x.apply_op1(GeluErf)
}

/// The element types the ops take (training in f32, the gradient check in f64), with
/// Φ(x) = (1 + erf(x/√2)) / 2 in the type's own erf (candle's).
trait Float: WithDType {
    fn cdf(self) -> Self;
}

impl Float for f32 {
    fn cdf(self) -> f32 {
        (candle_core::cpu::erf::erf_f32(self * std::f32::consts::FRAC_1_SQRT_2) + 1.0) * 0.5
    }
}

impl Float for f64 {
    fn cdf(self) -> f64 {
        (candle_core::cpu::erf::erf_f64(self * std::f64::consts::FRAC_1_SQRT_2) + 1.0) * 0.5
    }
}

/// An op's work on the contiguous elements of its `N` inputs, in either float type.
trait Kernel<const N: usize> {
    fn run<T: Float>(&self, inputs: [&[T]; N]) -> Vec<T>;
}

/// Runs `kernel` on the inputs' elements: all f32 or all f64, contiguous.
fn dispatch<const N: usize>(
    kernel: &impl Kernel<N>,
    name: &str,
    inputs: [(&CpuStorage, &Layout); N],
) -> Result<CpuStorage> {
    fn typed<T: Float, const N: usize>(
        kernel: &impl Kernel<N>,
        name: &str,
        inputs: [(&CpuStorage, &Layout); N],
    ) -> Result<CpuStorage> {
        let mut slices: [&[T]; N] = [&[]; N];
        for (slice, (storage, layout)) in slices.iter_mut().zip(inputs) {
            let Some((start, end)) = layout.contiguous_offsets() else {
                candle_core::bail!("{name}: contiguous inputs are expected");
            };
            *slice = &T::cpu_storage_as_slice(storage)?[start..end];
        }
        Ok(T::to_cpu_storage_owned(kernel.run(slices)))
    }
    match inputs.first().map(|(s, _)| s) {
        Some(CpuStorage::F32(_)) => typed::<f32, N>(kernel, name, inputs),
        Some(CpuStorage::F64(_)) => typed::<f64, N>(kernel, name, inputs),
        _ => candle_core::bail!("{name}: f32 or f64 inputs are expected"),
    }
}

struct GeluErf;

impl Kernel<1> for GeluErf {
    fn run<T: Float>(&self, [x]: [&[T]; 1]) -> Vec<T> {
        let mut out = vec![T::zero(); x.len()];
        out.par_chunks_mut(CHUNK)
            .zip(x.par_chunks(CHUNK))
            .for_each(|(out, x)| {
                for (o, &x) in out.iter_mut().zip(x) {
                    *o = x * x.cdf();
                }
            });
        out
    }
}

impl CustomOp1 for GeluErf {
    fn name(&self) -> &'static str {
        "train-gelu-erf"
    }

    fn cpu_fwd(&self, s: &CpuStorage, l: &Layout) -> Result<(CpuStorage, Shape)> {
        Ok((dispatch(self, self.name(), [(s, l)])?, l.shape().clone()))
    }

    fn bwd(&self, arg: &Tensor, _res: &Tensor, grad_res: &Tensor) -> Result<Option<Tensor>> {
        let x = arg.contiguous()?;
        let g = grad_res.contiguous()?;
        Ok(Some(x.apply_op2_no_bwd(&g, &GeluErfGrad)?))
    }
}

/// `g · (Φ(x) + x·φ(x))`: the incoming gradient `g` times GELU's derivative at `x`.
struct GeluErfGrad;

impl Kernel<2> for GeluErfGrad {
    fn run<T: Float>(&self, [x, g]: [&[T]; 2]) -> Vec<T> {
        let mut out = vec![T::zero(); x.len()];
        out.par_chunks_mut(CHUNK)
            .zip(x.par_chunks(CHUNK).zip(g.par_chunks(CHUNK)))
            .for_each(|(out, (x, g))| {
                for ((o, &x), &g) in out.iter_mut().zip(x).zip(g) {
                    let xf = x.to_f64();
                    let density = T::from_f64(FRAC_1_SQRT_2PI * (-0.5 * xf * xf).exp());
                    *o = g * (x.cdf() + x * density);
                }
            });
        out
    }
}

impl CustomOp2 for GeluErfGrad {
    fn name(&self) -> &'static str {
        "train-gelu-erf-grad"
    }

    fn cpu_fwd(
        &self,
        xs: &CpuStorage,
        xl: &Layout,
        gs: &CpuStorage,
        gl: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        if xl.shape() != gl.shape() {
            candle_core::bail!("{}: the gradient's shape is not the input's", self.name());
        }
        let out = dispatch(self, self.name(), [(xs, xl), (gs, gl)])?;
        Ok((out, xl.shape().clone()))
    }
}

/// `x + b`, `b` (`[hidden]`) added to every row of `x` (`[rows, hidden]`), differentiable.
pub fn add_bias(x: &Tensor, b: &Tensor) -> Result<Tensor> {
    x.apply_op2(b, AddBias)
}

/// Elements per parallel task for rows of `len`: whole rows, about [`CHUNK`] elements.
fn rows(len: usize) -> usize {
    (CHUNK / len.max(1)).max(1) * len.max(1)
}

/// The sum of the rows (`[rows, hidden]` → `[hidden]`), in f64.
fn column_sums<T: Float>(x: &[T], hidden: usize) -> Vec<f64> {
    x.par_chunks(rows(hidden))
        .map(|block| {
            let mut sums = vec![0.0; hidden];
            for row in block.chunks(hidden) {
                for (s, &v) in sums.iter_mut().zip(row) {
                    *s += v.to_f64();
                }
            }
            sums
        })
        .reduce(
            || vec![0.0; hidden],
            |mut a, b| {
                a.iter_mut().zip(&b).for_each(|(a, b)| *a += b);
                a
            },
        )
}

/// `x + b` on every row.
struct AddBias;

impl Kernel<2> for AddBias {
    fn run<T: Float>(&self, [x, b]: [&[T]; 2]) -> Vec<T> {
        let mut out = x.to_vec();
        out.par_chunks_mut(rows(b.len())).for_each(|block| {
            for row in block.chunks_mut(b.len()) {
                row.iter_mut().zip(b).for_each(|(v, &b)| *v += b);
            }
        });
        out
    }
}

impl CustomOp2 for AddBias {
    fn name(&self) -> &'static str {
        "train-add-bias"
    }

    fn cpu_fwd(
        &self,
        xs: &CpuStorage,
        xl: &Layout,
        bs: &CpuStorage,
        bl: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        let hidden = bl.shape().elem_count();
        if bl.shape().rank() != 1 || xl.shape().dims().last() != Some(&hidden) {
            candle_core::bail!("{}: a bias of the rows' width is expected", self.name());
        }
        let out = dispatch(self, self.name(), [(xs, xl), (bs, bl)])?;
        Ok((out, xl.shape().clone()))
    }

    fn bwd(
        &self,
        _x: &Tensor,
        b: &Tensor,
        _res: &Tensor,
        grad: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>)> {
        let db = grad.contiguous()?.apply_op1_no_bwd(&ColumnSums {
            hidden: b.elem_count(),
        })?;
        Ok((Some(grad.clone()), Some(db)))
    }
}

/// `[rows, hidden]` → `[hidden]`, the sum of the rows.
struct ColumnSums {
    hidden: usize,
}

impl Kernel<1> for ColumnSums {
    fn run<T: Float>(&self, [x]: [&[T]; 1]) -> Vec<T> {
        column_sums(x, self.hidden)
            .into_iter()
            .map(T::from_f64)
            .collect()
    }
}

impl CustomOp1 for ColumnSums {
    fn name(&self) -> &'static str {
        "train-column-sums"
    }

    fn cpu_fwd(&self, s: &CpuStorage, l: &Layout) -> Result<(CpuStorage, Shape)> {
        if l.shape().dims().last() != Some(&self.hidden) {
            candle_core::bail!("{}: rows of {} expected", self.name(), self.hidden);
        }
        Ok((
            dispatch(self, self.name(), [(s, l)])?,
            Shape::from(self.hidden),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::{Device, Var};

    #[test]
    fn values_equal_candles_and_the_gradient_its_derivative() {
        let xs: Vec<f64> = (-80..=80).map(|i| i as f64 * 0.1).collect();
        let x = Var::from_vec(xs.clone(), xs.len(), &Device::Cpu).unwrap();
        let y = gelu_erf(x.as_tensor()).unwrap();
        let candle = x.as_tensor().gelu_erf().unwrap();
        let diff = (&y - &candle).unwrap().abs().unwrap().max_all().unwrap();
        assert_eq!(diff.to_scalar::<f64>().unwrap(), 0.0);
        // f32 too: the same erf, the same values.
        let x32 = x.as_tensor().to_dtype(candle_core::DType::F32).unwrap();
        let a: Vec<f32> = gelu_erf(&x32).unwrap().to_vec1().unwrap();
        let b: Vec<f32> = x32.gelu_erf().unwrap().to_vec1().unwrap();
        assert_eq!(a, b);
        // d/dx Σ w·gelu(x) = w·gelu'(x), against central differences of the f64 erf.
        let w: Vec<f64> = (0..xs.len()).map(|i| 1.0 + (i % 7) as f64 * 0.25).collect();
        let wt = Tensor::from_vec(w.clone(), xs.len(), &Device::Cpu).unwrap();
        let loss = (y * wt).unwrap().sum_all().unwrap();
        let grad: Vec<f64> = loss
            .backward()
            .unwrap()
            .get(x.as_tensor())
            .unwrap()
            .to_vec1()
            .unwrap();
        let gelu = |v: f64| v * v.cdf();
        let h = 1e-6;
        for ((&v, &w), &g) in xs.iter().zip(&w).zip(&grad) {
            let numeric = w * (gelu(v + h) - gelu(v - h)) / (2.0 * h);
            assert!((g - numeric).abs() < 1e-8, "x = {v}: {g} vs {numeric}");
        }
    }

    /// `f(x, b)` and the gradients of Σ r·f against x and b, from a fused op and from its
    /// tensor expression: equal to rounding.
    fn same_values_and_gradients(
        fused: impl Fn(&Tensor, &Tensor) -> Tensor,
        expression: impl Fn(&Tensor, &Tensor) -> Tensor,
    ) {
        let dev = Device::Cpu;
        let wave = |n: usize, seed: f64| -> Vec<f64> {
            (0..n)
                .map(|i| ((i as f64 + seed) * 0.731).sin() * 2.0)
                .collect()
        };
        let x = Var::from_vec(wave(7 * 5, 0.0), (7, 5), &dev).unwrap();
        let b = Var::from_vec(wave(5, 3.0), 5, &dev).unwrap();
        let r = Tensor::from_vec(wave(7 * 5, 9.0), (7, 5), &dev).unwrap();
        let run = |f: &dyn Fn(&Tensor, &Tensor) -> Tensor| {
            let y = f(x.as_tensor(), b.as_tensor());
            let grads = (&y * &r).unwrap().sum_all().unwrap().backward().unwrap();
            let g = |v: &Var| grads.get(v.as_tensor()).unwrap().flatten_all().unwrap();
            [y.flatten_all().unwrap(), g(&x), g(&b)]
        };
        for (a, e) in run(&fused).iter().zip(run(&expression).iter()) {
            let diff: f64 = (a - e)
                .unwrap()
                .abs()
                .unwrap()
                .max_all()
                .unwrap()
                .to_scalar()
                .unwrap();
            let scale: f64 = e.abs().unwrap().max_all().unwrap().to_scalar().unwrap();
            assert!(scale > 0.1 && diff < 1e-12, "{diff} (scale {scale})");
        }
    }

    #[test]
    fn the_bias_and_the_layer_norm_equal_their_expressions() {
        same_values_and_gradients(
            |x, b| add_bias(x, b).unwrap(),
            |x, b| x.broadcast_add(b).unwrap(),
        );
        // The norm's weight is `b` here, its bias `b / 2`.
        let eps = 1e-5;
        same_values_and_gradients(
            |x, w| layer_norm(x, w, &(w / 2.0).unwrap(), eps).unwrap(),
            |x, w| {
                let mean = x.mean_keepdim(1).unwrap();
                let centred = x.broadcast_sub(&mean).unwrap();
                let var = centred.sqr().unwrap().mean_keepdim(1).unwrap();
                let normed = centred
                    .broadcast_div(&(var + eps).unwrap().sqrt().unwrap())
                    .unwrap();
                normed
                    .broadcast_mul(w)
                    .unwrap()
                    .broadcast_add(&(w / 2.0).unwrap())
                    .unwrap()
            },
        );
    }
}
