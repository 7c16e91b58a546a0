"""The native peers of bench/compare-native.sh: one engine embeds the unique SR sentences (a JSON
list) and MiniLM's 82 reference texts, on all cores, and prints one JSON line: load and embedding
time, sentences/s, and the min/mean cosine of the reference texts against sentence-transformers'
recorded embeddings and against sr-bench's (a JSON list of vectors from `sr-bench embed`).

  python native_peers.py st   MODEL_DIR          SENTENCES REFERENCE SRBENCH   # PyTorch fp32
  python native_peers.py ort  MODEL_DIR ONNX     SENTENCES REFERENCE SRBENCH   # onnxruntime int8

`st` is sentence-transformers itself (batches of 32, its own length sort); `ort` runs the ONNX file
as transformers.js does, with the model's tokenizer.json: truncation at 256 tokens, batches of 32
in length order padded to their longest, mean pooling over the mask, L2 normalisation.
"""

import json
import os
import sys
import time

import numpy as np

BATCH = 32
MAX_SEQ_LENGTH = 256


def cosines(vectors, others):
    a = np.asarray(vectors, dtype=np.float64)
    b = np.asarray(others, dtype=np.float64)
    c = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    return {"min": float(c.min()), "mean": float(c.mean())}


def sentence_transformers_engine(model_dir):
    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(os.cpu_count())
    model = SentenceTransformer(model_dir, device="cpu")
    return lambda texts: model.encode(texts, batch_size=BATCH, normalize_embeddings=True)


def onnxruntime_engine(model_dir, onnx_file):
    import onnxruntime as ort
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(MAX_SEQ_LENGTH)
    options = ort.SessionOptions()
    options.intra_op_num_threads = os.cpu_count()
    session = ort.InferenceSession(onnx_file, options, providers=["CPUExecutionProvider"])
    names = {i.name for i in session.get_inputs()}

    def embed(texts):
        encodings = tokenizer.encode_batch(texts)
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        out = [None] * len(texts)
        for start in range(0, len(order), BATCH):
            batch = order[start : start + BATCH]
            width = max(len(encodings[i].ids) for i in batch)
            ids = np.zeros((len(batch), width), dtype=np.int64)
            mask = np.zeros((len(batch), width), dtype=np.int64)
            for row, i in enumerate(batch):
                n = len(encodings[i].ids)
                ids[row, :n] = encodings[i].ids
                mask[row, :n] = 1
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in names:
                feeds["token_type_ids"] = np.zeros_like(ids)
            hidden = session.run(None, feeds)[0]
            m = mask[:, :, None].astype(np.float32)
            pooled = (hidden * m).sum(1) / m.sum(1)
            pooled /= np.linalg.norm(pooled, axis=1, keepdims=True)
            for row, i in enumerate(batch):
                out[i] = pooled[row]
        return np.stack(out)

    return embed


def main():
    kind, model_dir = sys.argv[1:3]
    rest = sys.argv[3:]
    t0 = time.perf_counter()
    if kind == "st":
        embed = sentence_transformers_engine(model_dir)
    elif kind == "ort":
        embed = onnxruntime_engine(model_dir, rest.pop(0))
    else:
        sys.exit(f"unknown engine {kind!r} (st or ort)")
    embed(["warm up"])
    load_s = time.perf_counter() - t0
    sentences_file, reference_file, srbench_file = rest
    sentences = json.load(open(sentences_file))
    t0 = time.perf_counter()
    vectors = embed(sentences)
    seconds = time.perf_counter() - t0
    assert len(vectors) == len(sentences)
    reference = json.load(open(reference_file))
    texts = [item["text"] for item in reference["items"]]
    expected = [item["embedding"] for item in reference["items"]]
    ours = embed(texts)
    print(json.dumps({
        "engine": kind,
        "threads": os.cpu_count(),
        "load_s": load_s,
        "sentences": len(sentences),
        "seconds": seconds,
        "sentences_per_s": len(sentences) / seconds,
        "vs_sentence_transformers": cosines(ours, expected),
        "vs_sr_bench": cosines(ours, json.load(open(srbench_file))),
    }))


if __name__ == "__main__":
    main()
