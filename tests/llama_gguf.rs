//! Genuine llama.cpp embedding files (MiniLM converted by llama.cpp's own converter, see
//! `./build.sh fixtures`) load as they are: the vocabulary rebuilt as a WordPiece tokenizer
//! gives the model's own ids, the embeddings match sentence-transformers, and the quick SR split
//! matches our own file's.

mod common;
mod crafted;

use std::path::PathBuf;

use sr_bench::backend::{load_embedder, load_embedder_with_options, BackendKind};
use sr_bench::error::{code_of, ErrorCode};
use sr_bench::model::{cosine, LoadOptions, ModelFile, TextTokenizer};

const MODEL: &str = "all-MiniLM-L6-v2";

fn llama_path(dtype: &str) -> PathBuf {
    common::llama_path(dtype)
}

fn llama_bytes(dtype: &str) -> Vec<u8> {
    std::fs::read(llama_path(dtype)).unwrap()
}

/// sentence-transformers truncates MiniLM at 256 tokens; the llama.cpp file records only its
/// 512-row position table.
const ST_MAX: LoadOptions = LoadOptions {
    max_seq_length: Some(256),
    prefix: None,
    integer_matmul: false,
};

fn tokenizer(file: &ModelFile) -> TextTokenizer {
    TextTokenizer::from_json(
        &file.tokenizer_json,
        file.info.max_seq_length,
        file.config.pad_token_id as u32,
        file.info.vocab_size,
    )
    .unwrap()
}

#[test]
fn the_file_describes_itself_and_defaults_to_its_position_table() {
    let file = ModelFile::from_bytes(llama_bytes("q8_0")).unwrap();
    let info = &file.info;
    assert_eq!(
        (
            info.architecture.name(),
            info.dtype.as_str(),
            info.pooling.as_str()
        ),
        ("bert", "q8_0", "mean")
    );
    assert_eq!(
        (info.dim, info.num_layers, info.vocab_size),
        (384, 6, 30522)
    );
    assert_eq!(info.max_seq_length, 512, "bert.context_length by default");
    let chosen = ModelFile::from_bytes_with(llama_bytes("q8_0"), ST_MAX.clone()).unwrap();
    assert_eq!(chosen.info.max_seq_length, 256);
    let too_long = ModelFile::from_bytes_with(
        llama_bytes("q8_0"),
        LoadOptions {
            max_seq_length: Some(513),
            prefix: None,
            integer_matmul: false,
        },
    )
    .err()
    .expect("longer than the position table");
    assert_eq!(code_of(&too_long), ErrorCode::BadRequest, "{too_long:#}");
}

#[test]
fn rebuilt_tokenizer_gives_the_model_tokenizers_ids_on_every_sr_sentence() {
    let ours = ModelFile::from_bytes_with(common::model_bytes(MODEL, "q8_0"), ST_MAX).unwrap();
    let llama = ModelFile::from_bytes_with(llama_bytes("q8_0"), ST_MAX.clone()).unwrap();
    let (ours, llama) = (tokenizer(&ours), tokenizer(&llama));
    let data = common::data_dir();
    let mut texts: Vec<String> = Vec::new();
    for name in sr_bench::eval::SR_FILES {
        let csv = std::fs::read(data.join("sr").join(format!("{name}.csv"))).unwrap();
        for row in sr_bench::eval::parse_sr(name, &csv).unwrap().rows {
            texts.extend([row.sentence1, row.relation, row.structure]);
        }
    }
    texts.extend(common::fixture(MODEL).items.into_iter().map(|i| i.text));
    texts.sort();
    texts.dedup();
    assert!(texts.len() > 27_000, "{} texts", texts.len());
    for text in &texts {
        assert_eq!(
            llama.encode(text).unwrap(),
            ours.encode(text).unwrap(),
            "ids differ on {text:?}"
        );
    }
    println!("{} texts: identical token ids", texts.len());
}

fn min_cosine_against_reference(dtype: &str) -> f32 {
    let fixture = common::fixture(MODEL);
    let embedder =
        load_embedder_with_options(llama_bytes(dtype), BackendKind::Cpu, ST_MAX).unwrap();
    let texts: Vec<&str> = fixture.items.iter().map(|i| i.text.as_str()).collect();
    let vectors = embedder.embed(&texts).unwrap();
    assert_eq!(vectors.len(), fixture.items.len());
    let min = fixture
        .items
        .iter()
        .zip(&vectors)
        .map(|(item, v)| cosine(v, &item.embedding))
        .fold(f32::INFINITY, f32::min);
    println!("llama.cpp {dtype}: min cosine vs sentence-transformers over 82 texts = {min:.7}");
    min
}

#[test]
fn llama_cpp_f32_matches_sentence_transformers() {
    let min = min_cosine_against_reference("f32");
    assert!(min >= 0.9999, "{min}");
}

#[test]
fn llama_cpp_f16_matches_sentence_transformers() {
    let min = min_cosine_against_reference("f16");
    assert!(min >= 0.9999, "{min}");
}

#[test]
fn llama_cpp_q8_0_matches_sentence_transformers() {
    let min = min_cosine_against_reference("q8_0");
    assert!(min >= 0.999, "{min}");
}

#[test]
fn quick_split_equals_our_own_files_within_half_a_point() {
    use sr_bench::eval::{EvalPlan, Split};
    let data = common::data_dir();
    let report = |bytes: Vec<u8>| {
        let embedder = load_embedder_with_options(bytes, BackendKind::Cpu, ST_MAX).unwrap();
        let files = sr_bench::eval::SR_FILES
            .iter()
            .map(|name| {
                let csv = std::fs::read(data.join("sr").join(format!("{name}.csv"))).unwrap();
                sr_bench::eval::parse_sr(name, &csv).unwrap()
            })
            .collect();
        let plan = EvalPlan::new(files, None, Split::Quick).unwrap();
        let scored = sr_bench::scoring::Scored::new(&embedder, sr_bench::eval::Encoder::Model);
        let cancel = std::sync::atomic::AtomicBool::new(false);
        sr_bench::eval::run(plan, &scored, 256, &mut |_| {}, &cancel).unwrap()
    };
    let ours = report(common::model_bytes(MODEL, "q8_0"));
    let llama = report(llama_bytes("q8_0"));
    let mut worst = 0f64;
    for dim in ["structure", "relation"] {
        let (a, b) = (
            serde_json::to_value(&ours.results).unwrap()[dim].clone(),
            serde_json::to_value(&llama.results).unwrap()[dim].clone(),
        );
        for name in sr_bench::eval::SR_FILES {
            let d = (a[name]["spearman"].as_f64().unwrap() - b[name]["spearman"].as_f64().unwrap())
                .abs();
            worst = worst.max(d);
        }
    }
    println!("quick split, llama.cpp q8_0 vs our q8_0: max |Δ Spearman| = {worst:.2}");
    assert!(worst <= 0.5, "max |Δ| {worst}");
}

/// bf16, which our kernels do not run, is widened to f32 as the file loads.
#[test]
fn llama_cpp_bf16_is_converted_and_matches_sentence_transformers() {
    let info = ModelFile::from_bytes(llama_bytes("bf16")).unwrap().info;
    assert_eq!(
        (info.stored_dtype.as_deref(), info.dtype.as_str()),
        (Some("bf16"), "f32")
    );
    let min = min_cosine_against_reference("bf16");
    // measured 0.9999711 (bf16's 8-bit mantissas).
    assert!(min >= 0.9999, "{min}");
}

#[test]
fn an_unsupported_dtype_is_named_with_the_way_out() {
    // q8_k (llama.cpp's activation type, never a file's weights): neither run nor converted.
    let file = crafted::rewritten(
        &llama_bytes("q8_0"),
        |_| {},
        |name, tensor| {
            if name != "blk.0.ffn_down.weight" {
                return tensor;
            }
            let values = tensor.dequantize(&candle_core::Device::Cpu).unwrap();
            candle_core::quantized::QTensor::quantize(
                &values,
                candle_core::quantized::GgmlDType::Q8K,
            )
            .unwrap()
        },
    );
    let err = ModelFile::from_bytes(file)
        .err()
        .expect("q8_k is not a dtype we run");
    let message = format!("{err:#}");
    assert_eq!(code_of(&err), ErrorCode::UnsupportedDtype, "{message}");
    assert!(
        message.contains("q8k") && message.contains("--outtype q8_0"),
        "{message}"
    );
}

#[test]
fn our_own_files_load_unchanged() {
    let ours = load_embedder(common::model_bytes(MODEL, "q8_0"), BackendKind::Cpu).unwrap();
    assert_eq!(ours.info.max_seq_length, 256);
    assert_eq!(ours.info.name, MODEL);
}
