"""Three eval questions of the newest compare under COMPARES_DIR: the untrained model's
answer (asked the bare question at temperature 0 on the llama-server at URL, as compare
asks the child) and the trained child's answer from the compare (make demo, issue 36)."""

import glob
import json
import os
import sys
import urllib.request


def rows(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def main(compares, url, model):
    answers = sorted(glob.glob(os.path.join(compares, "*", "child_answers.jsonl")))
    if not answers:
        print(f"demo: no compare under {compares}", file=sys.stderr)
        return 1
    folder = os.path.dirname(answers[-1])
    child = {row["id"]: row.get("text", "") for row in rows(answers[-1])}
    questions = [q for q in rows(os.path.join(folder, "questions.jsonl")) if q["id"] in child]
    for question in questions[:3]:
        body = {
            "model": model,
            "messages": [{"role": "user", "content": question["user"]}],
            "max_tokens": 384,
            "temperature": 0.0,
        }
        request = urllib.request.Request(
            url + "/chat/completions",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=120) as response:
            before = json.load(response)["choices"][0]["message"]["content"]
        print(f"\nQ: {question['user']}")
        print(f"-- before training:\n{before.strip()}")
        print(f"-- after training:\n{child[question['id']].strip()}")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
