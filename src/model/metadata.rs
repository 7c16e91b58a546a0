//! Typed reads of GGUF metadata, with errors that name the key.

use std::collections::HashMap;

use anyhow::{anyhow, bail, Result};
use candle_core::quantized::gguf_file::Value;

/// Typed reads of GGUF metadata, with errors that name the key.
pub(super) struct Metadata<'a>(pub &'a HashMap<String, Value>);

impl Metadata<'_> {
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.get(key)
    }

    fn value(&self, key: &str) -> Result<&Value> {
        self.0
            .get(key)
            .ok_or_else(|| anyhow!("model file: missing metadata '{key}'"))
    }

    pub fn text(&self, key: &str) -> Result<String> {
        match self.value(key)? {
            Value::String(s) => Ok(s.clone()),
            _ => bail!("model file: metadata '{key}' is not a string"),
        }
    }

    pub fn number(&self, key: &str) -> Result<u64> {
        self.value(key)?
            .to_u64()
            .map_err(|e| anyhow!("model file: metadata '{key}': {e}"))
    }

    /// A count or size: refused (not truncated) when it does not fit this platform's usize.
    pub fn size(&self, key: &str) -> Result<usize> {
        let n = self.number(key)?;
        usize::try_from(n).map_err(|_| anyhow!("model file: metadata '{key}' = {n} is too large"))
    }

    pub fn float(&self, key: &str) -> Result<f64> {
        match self.value(key)? {
            Value::F32(v) => Ok(*v as f64),
            Value::F64(v) => Ok(*v),
            _ => bail!("model file: metadata '{key}' is not a float"),
        }
    }

    pub fn bool(&self, key: &str) -> Result<bool> {
        match self.value(key)? {
            Value::Bool(v) => Ok(*v),
            _ => bail!("model file: metadata '{key}' is not a boolean"),
        }
    }

    pub fn strings(&self, key: &str) -> Result<Vec<String>> {
        match self.value(key)? {
            Value::Array(items) => items
                .iter()
                .map(|v| match v {
                    Value::String(s) => Ok(s.clone()),
                    _ => bail!("model file: metadata '{key}' holds a non-string"),
                })
                .collect(),
            _ => bail!("model file: metadata '{key}' is not an array"),
        }
    }

    pub fn integers(&self, key: &str) -> Result<Vec<i64>> {
        match self.value(key)? {
            Value::Array(items) => items
                .iter()
                .map(|v| match v {
                    Value::I32(x) => Ok(*x as i64),
                    Value::U32(x) => Ok(*x as i64),
                    Value::I64(x) => Ok(*x),
                    Value::U64(x) => Ok(*x as i64),
                    _ => bail!("model file: metadata '{key}' holds a non-integer"),
                })
                .collect(),
            _ => bail!("model file: metadata '{key}' is not an array"),
        }
    }
    pub fn floats(&self, key: &str) -> Result<Vec<f32>> {
        match self.value(key)? {
            Value::Array(items) => items
                .iter()
                .map(|v| match v {
                    Value::F32(x) => Ok(*x),
                    Value::F64(x) => Ok(*x as f32),
                    _ => bail!("model file: metadata '{key}' holds a non-float"),
                })
                .collect(),
            _ => bail!("model file: metadata '{key}' is not an array"),
        }
    }

    /// An array of bytes (gguf-py writes `bytes` as u8; i8 is read as its bit pattern).
    pub fn bytes(&self, key: &str) -> Result<Vec<u8>> {
        match self.value(key)? {
            Value::Array(items) => items
                .iter()
                .map(|v| match v {
                    Value::U8(x) => Ok(*x),
                    Value::I8(x) => Ok(*x as u8),
                    _ => bail!("model file: metadata '{key}' holds a non-byte"),
                })
                .collect(),
            _ => bail!("model file: metadata '{key}' is not an array"),
        }
    }
}
