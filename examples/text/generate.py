"""Writes reviews.tsv: short product-review-like sentences with a sentiment label (label<TAB>text).

Deterministic (fixed seed, no downloads): rerunning reproduces the committed file byte for byte.
Each review mixes neutral filler with a few sentiment words, so a bag-of-words model can learn it
but not from a single fixed position; lengths vary from ~4 to ~30 tokens (bucketing matters).

    python examples/text/generate.py   # rewrites examples/text/reviews.tsv
"""

from __future__ import annotations

import random
from pathlib import Path

PRODUCTS = [
    "phone",
    "laptop",
    "blender",
    "chair",
    "jacket",
    "headphones",
    "kettle",
    "lamp",
    "backpack",
    "camera",
    "keyboard",
    "monitor",
    "toaster",
    "vacuum",
    "watch",
    "speaker",
    "mattress",
    "desk",
    "router",
    "printer",
]
POSITIVE = [
    "great",
    "excellent",
    "amazing",
    "love",
    "perfect",
    "fantastic",
    "reliable",
    "sturdy",
    "comfortable",
    "wonderful",
    "recommend",
    "happy",
    "superb",
    "brilliant",
    "delighted",
    "flawless",
    "solid",
    "impressive",
]
NEGATIVE = [
    "terrible",
    "awful",
    "broke",
    "disappointed",
    "useless",
    "poor",
    "flimsy",
    "refund",
    "worst",
    "horrible",
    "waste",
    "defective",
    "annoying",
    "cheap",
    "returned",
    "faulty",
    "noisy",
    "regret",
]
NEUTRAL = ["okay", "average", "fine", "decent", "ordinary", "acceptable", "standard", "expected", "mediocre", "fair"]
FILLER = [
    "the",
    "it",
    "this",
    "was",
    "is",
    "a",
    "and",
    "after",
    "week",
    "month",
    "delivery",
    "box",
    "price",
    "color",
    "my",
    "for",
    "with",
    "use",
    "daily",
    "bought",
    "arrived",
    "size",
    "battery",
    "screen",
    "design",
    "quality",
    "really",
    "quite",
    "very",
    "so",
    "overall",
    "gift",
    "kids",
    "office",
    "home",
    "travel",
]
LABELS = {"positive": POSITIVE, "negative": NEGATIVE, "neutral": NEUTRAL}


def review(rng: random.Random, label: str) -> str:
    words = [rng.choice(FILLER) for _ in range(rng.randint(2, 22))]
    words.insert(rng.randint(0, len(words)), rng.choice(PRODUCTS))
    for _ in range(rng.randint(1, 3)):
        words.insert(rng.randint(0, len(words)), rng.choice(LABELS[label]))
    # A little noise: a word of another sentiment now and then, as in real reviews.
    if rng.random() < 0.15:
        other = rng.choice([k for k in LABELS if k != label])
        words.insert(rng.randint(0, len(words)), rng.choice(LABELS[other]))
    text = " ".join(words)
    text = text[0].upper() + text[1:] + rng.choice([".", "!", "...", "!!", "."])
    return text


def main(path: Path = Path(__file__).with_name("reviews.tsv"), count: int = 1800, seed: int = 7) -> None:
    rng = random.Random(seed)
    labels = list(LABELS)
    lines = [f"{label}\t{review(rng, label)}" for label in (labels[i % 3] for i in range(count))]
    rng.shuffle(lines)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
