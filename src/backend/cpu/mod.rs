//! The CPU backend: candle tensors, `QMatMul` for quantized linear layers.

mod bert;
mod weights;

use anyhow::{bail, Result};
use candle_core::quantized::QMatMul;

use super::MatmulMode;
use crate::model::{EncoderBackend, ModelFile};

/// Builds the CPU encoder for the file's architecture.
pub fn load(
    file: &ModelFile,
    word_embeddings: QMatMul,
    matmul: MatmulMode,
) -> Result<Box<dyn EncoderBackend>> {
    let weights = weights::Weights::new(file, matmul);
    match file.info.architecture.as_str() {
        "bert" => Ok(Box::new(bert::Bert::load(
            &weights,
            &file.config,
            word_embeddings,
        )?)),
        other => bail!("model file: unsupported architecture '{other}'"),
    }
}
