"""The speed anchor of bench/train.sh: sentence-transformers' training step on the CPU
(CosineSimilarityLoss: the cosine of the mean-pooled pair against score / 5, MSE; AdamW lr 2e-5,
weight decay 0.01 except biases and LayerNorms; gradients clipped at 1; dropout on), 16 pairs a
step, on the very pairs `sr-bench train` is timed on.

    python bench/train_anchor.py MODEL_FOLDER DATA_DIR STEPS PAIRS_CSV

Draws STEPS x 16 pairs of STS-B train (seed 1), none with a text of a test set the benchmark
reports (STS-B test, SR's stsb, askubuntu, twitter and biosses: `sr-bench train` drops those
pairs), writes them to PAIRS_CSV for `sr-bench train --train PAIRS_CSV`, and prints the steps
per second of STEPS steps over them, every step timed (as sr-bench's `train_seconds` counts every
step). The draw matters: STS-B train's first rows are short video captions, and 30 steps in file
order are ~2.3x fewer padded tokens than 30 shuffled steps.
"""
import csv
import random
import sys
import time

import torch
from sentence_transformers import InputExample, SentenceTransformer, losses

folder, data, steps, pairs_csv = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]


def read(path):
    with open(path, encoding="utf-8", newline="") as f:
        return list(csv.reader(f))


reported = set()
for a, b, _ in read(f"{data}/stsb/stsb-en-test.csv"):
    reported.update((a, b))
for name in ("stsb", "askubuntu", "twitter", "biosses"):
    with open(f"{data}/sr/{name}.csv", encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            reported.update((row["sentence1"], row["relation"], row["structure"]))
train = [r for r in read(f"{data}/stsb/stsb-en-train.csv") if r[0] not in reported and r[1] not in reported]
rows = random.Random(1).sample(train, steps * 16)
with open(pairs_csv, "w", encoding="utf-8", newline="") as f:
    w = csv.writer(f)
    w.writerow(["sentence1", "sentence2", "score"])
    w.writerows(rows)

torch.manual_seed(1)
model = SentenceTransformer(folder, device="cpu")
model.train()
loss_fn = losses.CosineSimilarityLoss(model)
examples = [InputExample(texts=[a, b], label=float(s) / 5) for a, b, s in rows]
no_decay = ("bias", "LayerNorm.bias", "LayerNorm.weight")
groups = [
    {"params": [p for n, p in model.named_parameters() if not any(k in n for k in no_decay)], "weight_decay": 0.01},
    {"params": [p for n, p in model.named_parameters() if any(k in n for k in no_decay)], "weight_decay": 0.0},
]
opt = torch.optim.AdamW(groups, lr=2e-5, eps=1e-6)


def step(i):
    batch = examples[i * 16 : (i + 1) * 16]
    features = [model.tokenize([ex.texts[j] for ex in batch]) for j in (0, 1)]
    labels = torch.tensor([ex.label for ex in batch])
    loss = loss_fn(features, labels)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    opt.zero_grad()


start = time.perf_counter()
for i in range(steps):
    step(i)
print(steps / (time.perf_counter() - start))
