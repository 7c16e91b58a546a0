//! Sentence vectors from the last layer's token vectors, over the attention mask, then L2
//! normalisation: mean (sentence-transformers' default), first token, last token, or maximum.

use anyhow::Result;
use candle_core::{DType, IndexOp, Tensor, D};

use crate::model::Pooling;

/// `hidden`: `[batch, seq, dim]`; `mask`: `[batch, seq]` (1 = token, 0 = padding on the
/// right). Returns the pooled vectors `[batch, dim]`, before normalisation.
pub fn pool(hidden: &Tensor, mask: &Tensor, pooling: Pooling) -> Result<Tensor> {
    let keep = mask.to_dtype(DType::F32)?.unsqueeze(D::Minus1)?;
    let pooled = match pooling {
        Pooling::Mean => {
            let summed = hidden.broadcast_mul(&keep)?.sum(1)?;
            let counts = keep.sum(1)?.clamp(1e-9, f64::INFINITY)?;
            summed.broadcast_div(&counts)?
        }
        Pooling::Cls => hidden.i((.., 0, ..))?.contiguous()?,
        Pooling::Last => {
            // Padding is on the right: a row's last token sits at (its length − 1).
            let lengths: Vec<u32> = mask.to_dtype(DType::U32)?.sum(1)?.to_vec1()?;
            let rows = lengths
                .iter()
                .enumerate()
                .map(|(row, &n)| hidden.i((row, n.saturating_sub(1) as usize, ..)))
                .collect::<candle_core::Result<Vec<_>>>()?;
            Tensor::stack(&rows, 0)?
        }
        Pooling::Max => {
            // Padding never wins: it is pushed far below any activation (as sentence-transformers).
            let offset = ((keep - 1.0)? * 1e9)?;
            hidden.broadcast_add(&offset)?.max(1)?
        }
    };
    Ok(pooled)
}

/// Each row of `pooled` (`[batch, dim]`) scaled to unit L2 norm.
pub fn normalize(pooled: &Tensor) -> Result<Vec<Vec<f32>>> {
    let norm = pooled
        .sqr()?
        .sum_keepdim(1)?
        .sqrt()?
        .clamp(1e-12, f64::INFINITY)?;
    Ok(pooled.broadcast_div(&norm)?.to_vec2()?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;

    /// Two rows of three tokens in 2-D; the second row has one padding token (huge values
    /// that must never leak into any pooling).
    fn batch() -> (Tensor, Tensor) {
        let hidden = Tensor::new(
            &[
                [[1f32, 0.], [0., 2.], [3., 1.]],
                [[0., 1.], [2., 0.], [100., 100.]],
            ],
            &Device::Cpu,
        )
        .unwrap();
        let mask = Tensor::new(&[[1u32, 1, 1], [1, 1, 0]], &Device::Cpu).unwrap();
        (hidden, mask)
    }

    fn unit(v: [f32; 2]) -> Vec<f32> {
        let n = (v[0] * v[0] + v[1] * v[1]).sqrt();
        vec![v[0] / n, v[1] / n]
    }

    fn close(a: &[Vec<f32>], b: &[Vec<f32>]) -> bool {
        a.iter()
            .flatten()
            .zip(b.iter().flatten())
            .all(|(x, y)| (x - y).abs() < 1e-6)
    }

    #[test]
    fn each_mode_pools_the_tokens_the_mask_keeps() {
        let (hidden, mask) = batch();
        let cases = [
            (Pooling::Mean, [unit([4. / 3., 1.]), unit([1., 0.5])]),
            (Pooling::Cls, [unit([1., 0.]), unit([0., 1.])]),
            (Pooling::Last, [unit([3., 1.]), unit([2., 0.])]),
            (Pooling::Max, [unit([3., 2.]), unit([2., 1.])]),
        ];
        for (pooling, want) in cases {
            let got = normalize(&pool(&hidden, &mask, pooling).unwrap()).unwrap();
            assert!(close(&got, &want), "{pooling:?}: {got:?} vs {want:?}");
        }
    }
}
