"""The native peers of bench/compare-native.sh: one engine embeds the unique SR sentences (a JSON
list) and the parity texts (a JSON list: MiniLM's 82 reference texts), on all cores, and prints
one JSON line: load and embedding time, sentences/s, and the min/mean cosine of the parity texts'
vectors against sr-bench's (a JSON list of vectors from `sr-bench embed`) and, when given,
against sentence-transformers' recorded embeddings (tests/fixtures/<model>.json).

  python native_peers.py st    MODEL_DIR      SENTENCES TEXTS SRBENCH [REFERENCE]   # PyTorch fp32
  python native_peers.py ort   MODEL_DIR ONNX SENTENCES TEXTS SRBENCH [REFERENCE]   # onnxruntime
  python native_peers.py llama GGUF           SENTENCES TEXTS SRBENCH [REFERENCE]   # llama.cpp

`st` is sentence-transformers itself (batches of 32, its own length sort); `ort` runs the ONNX file
as transformers.js does, with the model's tokenizer.json: truncation at 256 tokens, batches of 32
in length order padded to their longest, mean pooling over the mask, L2 normalisation. `llama` is
llama.cpp (llama-cpp-python) on a GGUF file, in embedding mode with mean pooling, with the file's
own tokenizer, the texts in length order packed into decodes of at most LLAMA_TOKENS tokens or
one text (llama.cpp attends across all the sequences of one decode, masked, so small decodes are
fastest: 64 tokens by default; 32 to 256 were within 5 % of each other on 2,000 SR sentences
here, decodes of 512 tokens 1.4x slower); since llama.cpp does not truncate, a text over 256
tokens is cut at the last word that fits (the reference paragraph), as the browser comparison
does.
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


def llama_engine(gguf):
    import llama_cpp

    budget = int(os.environ.get("LLAMA_TOKENS", "64"))
    # n_batch bounds one decode and must hold the longest text (embed() would cut it otherwise).
    model = llama_cpp.Llama(model_path=gguf, embedding=True, n_ctx=MAX_SEQ_LENGTH, n_batch=MAX_SEQ_LENGTH,
                            n_ubatch=MAX_SEQ_LENGTH, n_threads=os.cpu_count(), n_threads_batch=os.cpu_count(),
                            pooling_type=llama_cpp.LLAMA_POOLING_TYPE_MEAN, verbose=False)
    count = lambda t: len(model.tokenize(t.encode("utf-8"), add_bos=True))  # with the file's [CLS]/[SEP]

    def fit(text):  # (the most words that fit in 256 tokens, their token count): one count a text
        n = count(text)
        if n <= MAX_SEQ_LENGTH:
            return text, n
        words = text.split(" ")
        lo, hi = 0, len(words)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            lo, hi = (mid, hi) if count(" ".join(words[:mid])) <= MAX_SEQ_LENGTH else (lo, mid - 1)
        text = " ".join(words[:lo])
        return text, count(text)

    def embed(texts):
        texts, counts = zip(*(fit(t) for t in texts)) if texts else ((), ())
        order = sorted(range(len(texts)), key=lambda i: counts[i])
        out = [None] * len(texts)
        group, tokens = [], 0
        for i in order + [None]:  # length order, in decodes of at most `budget` tokens (or one text)
            if group and (i is None or tokens + counts[i] > budget):
                for j, v in zip(group, model.embed([texts[j] for j in group], normalize=True, truncate=False)):
                    out[j] = np.asarray(v, dtype=np.float32)
                group, tokens = [], 0
            if i is not None:
                group.append(i)
                tokens += counts[i]
        return np.stack(out)

    return embed


def main():
    kind = sys.argv[1]
    rest = sys.argv[2:]
    t0 = time.perf_counter()
    if kind == "st":
        embed = sentence_transformers_engine(rest.pop(0))
    elif kind == "ort":
        embed = onnxruntime_engine(rest.pop(0), rest.pop(0))
    elif kind == "llama":
        embed = llama_engine(rest.pop(0))
    else:
        sys.exit(f"unknown engine {kind!r} (st, ort or llama)")
    embed(["warm up"])
    load_s = time.perf_counter() - t0
    sentences_file, texts_file, srbench_file, *reference_file = rest
    sentences = json.load(open(sentences_file))
    t0 = time.perf_counter()
    vectors = embed(sentences)
    seconds = time.perf_counter() - t0
    assert len(vectors) == len(sentences)
    ours = embed(json.load(open(texts_file)))
    result = {
        "engine": kind,
        "threads": os.cpu_count(),
        "load_s": load_s,
        "sentences": len(sentences),
        "seconds": seconds,
        "sentences_per_s": len(sentences) / seconds,
        "vs_sr_bench": cosines(ours, json.load(open(srbench_file))),
    }
    if reference_file:
        expected = [item["embedding"] for item in json.load(open(reference_file[0]))["items"]]
        result["vs_sentence_transformers"] = cosines(ours, expected)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
