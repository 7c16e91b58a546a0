//! Hugging Face's tensor names as llama.cpp's converter writes them (BERT's layout: the
//! architectures only llama.cpp's files bring are read by their own names already).

/// The llama.cpp name of a tensor we know by its Hugging Face name.
pub(crate) fn tensor_name(hf: &str) -> Option<String> {
    let fixed = [
        ("embeddings.word_embeddings.weight", "token_embd.weight"),
        (
            "embeddings.position_embeddings.weight",
            "position_embd.weight",
        ),
        (
            "embeddings.token_type_embeddings.weight",
            "token_types.weight",
        ),
        ("embeddings.LayerNorm.weight", "token_embd_norm.weight"),
        ("embeddings.LayerNorm.bias", "token_embd_norm.bias"),
    ];
    if let Some((_, name)) = fixed.iter().find(|(h, _)| *h == hf) {
        return Some(name.to_string());
    }
    let rest = hf.strip_prefix("encoder.layer.")?;
    let (layer, part) = rest.split_once('.')?;
    let layer: usize = layer.parse().ok()?;
    let (module, param) = part.rsplit_once('.')?;
    let block = match module {
        "attention.self.query" => "attn_q",
        "attention.self.key" => "attn_k",
        "attention.self.value" => "attn_v",
        "attention.output.dense" => "attn_output",
        "attention.output.LayerNorm" => "attn_output_norm",
        "intermediate.dense" => "ffn_up",
        "output.dense" => "ffn_down",
        "output.LayerNorm" => "layer_output_norm",
        _ => return None,
    };
    Some(format!("blk.{layer}.{block}.{param}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hugging_face_names_map_to_llama_cpp_names() {
        assert_eq!(
            tensor_name("encoder.layer.5.attention.output.LayerNorm.bias").as_deref(),
            Some("blk.5.attn_output_norm.bias")
        );
        assert_eq!(
            tensor_name("embeddings.word_embeddings.weight").as_deref(),
            Some("token_embd.weight")
        );
        assert_eq!(tensor_name("encoder.layer.x.output.dense.weight"), None);
        assert_eq!(tensor_name("pooler.dense.weight"), None);
    }
}
