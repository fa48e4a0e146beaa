"""overbrainer's compare client (spec/export-compare-push.md CMP-8, CMP-10; issue 15).

Runs on the run's target inside the compare job: starts the pinned `llama-server` on the
child's GGUF bound to 127.0.0.1 (a free port, everything it prints into server.log),
waits for /health up to --start-secs, asks every question of questions.jsonl strictly one
at a time (streamed, so the time to the first token is measured here), appends one line
per answer to child_answers.jsonl as it comes, writes hardware.json (the machine and the
devices the build used), and stops the server. Standard library only.
"""

import argparse
import json
import os
import platform
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

PREFIX = "overbrainer-compare: "
# A stream chunk with a non-empty content delta.
CONTENT = re.compile(rb'"content"\s*:\s*"[^"]')


def line(text):
    print(PREFIX + text, file=sys.stderr, flush=True)


def fail(text):
    line("failed: " + text)
    sys.exit(3)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def health(port):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as r:
            return r.status == 200
    except (urllib.error.URLError, OSError, ValueError):
        return False


def start(args):
    """The server's process and port, once /health answers 200."""
    with open(args.log, "ab") as log:
        for _ in range(3):
            port = free_port()
            process = subprocess.Popen(
                [args.server, "-m", args.gguf, "--host", "127.0.0.1", "--port", str(port),
                 "-c", str(args.ctx), "-np", "1"],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
            deadline = time.monotonic() + args.start_secs
            while time.monotonic() < deadline:
                if process.poll() is not None:
                    break
                if health(port):
                    return process, port
                time.sleep(0.2)
            if process.poll() is None:
                stop(process)
                fail(f"llama-server did not become ready on 127.0.0.1:{port} within "
                     f"{args.start_secs} s ([compare] server_start_secs); see server.log")
            # It exited: perhaps the port was taken meanwhile; try another.
        fail(f"llama-server exited with status {process.returncode} before it was ready; see server.log")


def stop(process):
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def ask(port, question, args):
    body = {
        "messages": ([{"role": "system", "content": question["system"]}] if question.get("system") else [])
        + [{"role": "user", "content": question["user"]}],
        "max_tokens": args.max_tokens,
        "temperature": args.temperature,
        "stream": True,
    }
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/v1/chat/completions",
        data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    answer = {"id": question["id"], "text": "", "ttft_secs": None, "total_secs": None,
              "output_tokens": None, "tokens_per_second": None, "cut": False, "error": None}
    started = time.monotonic()
    try:
        with urllib.request.urlopen(request, timeout=args.request_secs) as response:
            # Read as it comes until the first content delta (the time to the first
            # token), then the rest at once: no per-line work while the server generates.
            buffer, seen = b"", 0
            while answer["ttft_secs"] is None:
                data = response.read1(65536)
                if not data:
                    break
                buffer += data
                while answer["ttft_secs"] is None:
                    end = buffer.find(b"\n", seen)
                    if end < 0:
                        break
                    row, seen = buffer[seen:end].strip(), end + 1
                    if row.startswith(b"data:") and CONTENT.search(row):
                        answer["ttft_secs"] = time.monotonic() - started
            buffer += response.read()
        answer["total_secs"] = time.monotonic() - started
        rows = [r[5:].strip() for r in buffer.split(b"\n") if r.startswith(b"data:")]
        chunks = json.loads(b"[" + b",".join(r for r in rows if r != b"[DONE]") + b"]")
    except (urllib.error.URLError, OSError, ValueError) as error:
        answer["error"] = f"{type(error).__name__}: {error}"
        answer["total_secs"] = None
        return answer
    parts, timings, usage, finish = [], None, None, None
    for chunk in chunks:
        timings = chunk.get("timings") or timings
        usage = chunk.get("usage") or usage
        for choice in chunk.get("choices") or []:
            delta = (choice.get("delta") or {}).get("content")
            if delta:
                parts.append(delta)
            finish = choice.get("finish_reason") or finish
    if answer["ttft_secs"] is None:
        answer["ttft_secs"] = answer["total_secs"]
    answer["text"] = "".join(parts)
    answer["cut"] = finish == "length"
    if timings:
        answer["output_tokens"] = timings.get("predicted_n")
        answer["tokens_per_second"] = timings.get("predicted_per_second")
    if answer["output_tokens"] is None and usage:
        answer["output_tokens"] = usage.get("completion_tokens")
    return answer


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for row in f:
                if row.startswith("model name") or row.startswith("Model"):
                    return row.split(":", 1)[1].strip()
    except OSError:
        pass
    if platform.system() == "Darwin":
        try:
            return subprocess.run(["sysctl", "-n", "machdep.cpu.brand_string"], capture_output=True,
                                  text=True, timeout=10).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            pass
    return platform.processor() or platform.machine()


def hardware(args):
    def run(flag):
        try:
            done = subprocess.run([args.server, flag], capture_output=True, text=True, timeout=60)
            return done.stdout + done.stderr
        except (OSError, subprocess.SubprocessError):
            return ""
    devices = []
    for row in run("--list-devices").splitlines():
        match = re.match(r"^\s*([A-Za-z]+)\d+:\s*(.+?)(?:\s+\(.*\))?\s*$", row)
        if match:
            devices.append({"backend": match.group(1), "name": match.group(2)})
    version = next((r.strip() for r in run("--version").splitlines() if r.startswith("version")), "")
    return {"cpu": cpu_model(), "machine": platform.machine(), "system": platform.system(),
            "devices": devices, "version": version}


def main():
    parser = argparse.ArgumentParser()
    for name in ("server", "gguf", "questions", "answers", "log", "hardware"):
        parser.add_argument("--" + name, required=True)
    parser.add_argument("--ctx", type=int, required=True)
    parser.add_argument("--max-tokens", type=int, required=True)
    parser.add_argument("--temperature", type=float, required=True)
    parser.add_argument("--start-secs", type=float, required=True)
    parser.add_argument("--request-secs", type=float, default=600)
    # A server already running on 127.0.0.1 (bench/compare.sh measures the asking alone).
    parser.add_argument("--port", type=int)
    args = parser.parse_args()
    with open(args.questions) as f:
        questions = [json.loads(row) for row in f if row.strip()]
    with open(args.hardware, "w") as f:
        json.dump(hardware(args), f, indent=2)
    process, port = (None, args.port) if args.port else start(args)
    if process:
        signal.signal(signal.SIGTERM, lambda *_: (stop(process), sys.exit(143)))
    line(f"serving on 127.0.0.1:{port}")
    try:
        with open(args.answers, "a") as out:
            for number, question in enumerate(questions, 1):
                answer = ask(port, question, args)
                out.write(json.dumps(answer) + "\n")
                out.flush()
                line(f"answered {number}/{len(questions)}" + (" (error)" if answer["error"] else ""))
    finally:
        if process:
            stop(process)
    line("done")


if __name__ == "__main__":
    main()
