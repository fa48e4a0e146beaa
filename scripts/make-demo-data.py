#!/usr/bin/env python3
"""Writes the demo project's chat data: examples/demo/data/{train,eval}.jsonl.

Deterministic (fixed seed, no clock, no network): running it again writes the same bytes.
Each record is an answer record in Axolotl `chat_template` format (spec/pipeline.md, DAT-4):
a user question, an assistant answer and its short step-by-step `reasoning_content`.
Topics: arithmetic, unit conversion and small logic puzzles, whose answers are computed here,
so every answer is correct.

Usage: scripts/make-demo-data.py [OUTPUT_DIR]   (default: examples/demo/data)
"""

import hashlib
import json
import random
import sys
from pathlib import Path

SEED = 20260922
TRAIN_RECORDS = 240
EVAL_RECORDS = 40
MODEL = "demo-parent (computed by scripts/make-demo-data.py)"


def question_id(topic, subtopic, question):
    """32 hex characters of SHA-256 over the parts, split by a unit separator (DAT-3)."""
    digest = hashlib.sha256("\x1f".join([topic, subtopic, question]).encode("utf-8"))
    return digest.hexdigest()[:32]


def fmt(value):
    """A number without a useless `.0`, rounded to 3 decimals."""
    value = round(value, 3)
    if value == int(value):
        return str(int(value))
    return f"{value:.3f}".rstrip("0").rstrip(".")


def addition(rng):
    a, b = rng.randint(12, 989), rng.randint(12, 989)
    q = f"What is {a} + {b}?"
    r = (
        f"Add the hundreds, tens and ones. {a} + {b}: first {a} + {b // 10 * 10} = "
        f"{a + b // 10 * 10}, then add the remaining {b % 10} to get {a + b}."
    )
    return "arithmetic", "addition", q, r, f"{a} + {b} = {a + b}."


def subtraction(rng):
    a, b = rng.randint(200, 999), rng.randint(11, 199)
    q = f"What is {a} - {b}?"
    r = (
        f"Take away the tens first: {a} - {b // 10 * 10} = {a - b // 10 * 10}. "
        f"Then take away the ones: {a - b // 10 * 10} - {b % 10} = {a - b}."
    )
    return "arithmetic", "subtraction", q, r, f"{a} - {b} = {a - b}."


def multiplication(rng):
    a, b = rng.randint(11, 99), rng.randint(3, 19)
    tens, ones = a // 10 * 10, a % 10
    q = f"Compute {a} times {b}."
    r = (
        f"Split {a} into {tens} and {ones}. {tens} x {b} = {tens * b} and "
        f"{ones} x {b} = {ones * b}. Adding them: {tens * b} + {ones * b} = {a * b}."
    )
    return "arithmetic", "multiplication", q, r, f"{a} x {b} = {a * b}."


def percentage(rng):
    p = rng.choice([5, 10, 15, 20, 25, 30, 40, 50, 75])
    n = rng.randint(2, 40) * 20
    q = f"What is {p}% of {n}?"
    r = (
        f"{p}% means {p} per hundred, so compute {n} x {p} / 100. "
        f"{n} x {p} = {n * p}, and {n * p} / 100 = {fmt(n * p / 100)}."
    )
    return "arithmetic", "percentages", q, r, f"{p}% of {n} is {fmt(n * p / 100)}."


LENGTHS = [
    ("kilometers", "meters", 1000),
    ("meters", "centimeters", 100),
    ("miles", "kilometers", 1.609),
    ("feet", "inches", 12),
    ("inches", "centimeters", 2.54),
]
MASSES = [
    ("kilograms", "grams", 1000),
    ("pounds", "kilograms", 0.454),
    ("tonnes", "kilograms", 1000),
]
TIMES = [
    ("hours", "minutes", 60),
    ("minutes", "seconds", 60),
    ("days", "hours", 24),
    ("weeks", "days", 7),
]


def conversion(rng, subtopic, table):
    source, target, factor = rng.choice(table)
    amount = rng.randint(2, 60) if rng.random() < 0.7 else rng.randint(2, 40) / 4
    q = f"How many {target} are in {fmt(amount)} {source}?"
    r = (
        f"One of the {source} is {fmt(factor)} {target}. Multiply: "
        f"{fmt(amount)} x {fmt(factor)} = {fmt(amount * factor)}."
    )
    answer = f"{fmt(amount)} {source} is {fmt(amount * factor)} {target}."
    return "unit conversion", subtopic, q, r, answer


def temperature(rng):
    c = rng.randint(-20, 45)
    f = c * 9 / 5 + 32
    q = f"Convert {c} degrees Celsius to Fahrenheit."
    r = (
        f"Use F = C x 9/5 + 32. {c} x 9/5 = {fmt(c * 9 / 5)}, "
        f"and {fmt(c * 9 / 5)} + 32 = {fmt(f)}."
    )
    return "unit conversion", "temperature", q, r, f"{c} degrees Celsius is {fmt(f)} degrees Fahrenheit."


NAMES = ["Ada", "Ben", "Cleo", "Dan", "Eva", "Finn", "Gus", "Hana", "Ivo", "Jade"]


def ordering(rng):
    a, b, c = rng.sample(NAMES, 3)
    q = f"{a} is taller than {b}, and {b} is taller than {c}. Who is the shortest?"
    r = (
        f"{a} > {b} and {b} > {c}, so the order from tallest is {a}, {b}, {c}. "
        f"The last one, {c}, is the shortest."
    )
    return "logic", "ordering", q, r, f"{c} is the shortest."


def parity(rng):
    n = rng.randint(3, 9)
    numbers = [rng.randint(1, 99) for _ in range(n)]
    odd = [x for x in numbers if x % 2]
    listed = ", ".join(str(x) for x in numbers)
    q = f"Is the sum of {listed} even or odd?"
    kind = "odd" if len(odd) % 2 else "even"
    r = (
        f"A sum is odd exactly when it has an odd count of odd terms. The odd terms are "
        f"{', '.join(str(x) for x in odd) or 'none'}: {len(odd)} of them, which is "
        f"{'odd' if len(odd) % 2 else 'even'}. Check: the sum is {sum(numbers)}."
    )
    return "logic", "parity", q, r, f"The sum is {sum(numbers)}, which is {kind}."


def syllogism(rng):
    kinds = [
        ("bloops", "razzies", "lazzies"),
        ("cats", "mammals", "animals"),
        ("squares", "rectangles", "quadrilaterals"),
        ("robins", "birds", "animals with feathers"),
        ("oaks", "trees", "plants"),
    ]
    a, b, c = rng.choice(kinds)
    if rng.random() < 0.5:
        q = f"All {a} are {b}, and all {b} are {c}. Are all {a} {c}?"
        r = f"Every one of the {a} is one of the {b}, and every one of the {b} is one of the {c}. The inclusion chains, so yes."
        answer = f"Yes, all {a} are {c}."
    else:
        q = f"All {a} are {b}. Are all {b} {a}?"
        r = f"The statement only puts every one of the {a} inside the {b}. Nothing says the {b} hold only {a}, so it does not follow."
        answer = f"Not necessarily: there may be {b} that are not {a}."
    return "logic", "syllogisms", q, r, answer


GENERATORS = [
    addition,
    subtraction,
    multiplication,
    percentage,
    lambda rng: conversion(rng, "length", LENGTHS),
    lambda rng: conversion(rng, "mass", MASSES),
    lambda rng: conversion(rng, "time", TIMES),
    temperature,
    ordering,
    parity,
    syllogism,
]


def records(rng, count):
    seen = set()
    out = []
    while len(out) < count:
        topic, subtopic, q, r, answer = rng.choice(GENERATORS)(rng)
        if q in seen:
            continue
        seen.add(q)
        out.append(
            {
                "id": question_id(topic, subtopic, q),
                "topic": topic,
                "subtopic": subtopic,
                "messages": [
                    {"role": "user", "content": q},
                    {"role": "assistant", "content": answer, "reasoning_content": r},
                ],
                "meta": {
                    "model": MODEL,
                    "input_tokens": len(q.split()),
                    "output_tokens": len(r.split()) + len(answer.split()),
                    "finish_reason": "stop",
                    "reasoning_kind": "raw",
                    "excluded": None,
                },
            }
        )
    return out


def main():
    out_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent / "examples/demo/data"
    out_dir.mkdir(parents=True, exist_ok=True)
    rng = random.Random(SEED)
    everything = records(rng, TRAIN_RECORDS + EVAL_RECORDS)
    for name, part in (("train.jsonl", everything[:TRAIN_RECORDS]), ("eval.jsonl", everything[TRAIN_RECORDS:])):
        with open(out_dir / name, "w", encoding="utf-8", newline="\n") as file:
            for record in part:
                file.write(json.dumps(record, ensure_ascii=False) + "\n")
    print(f"wrote {TRAIN_RECORDS} train and {EVAL_RECORDS} eval records to {out_dir}")


if __name__ == "__main__":
    main()
