"""overbrainer's metrics plugin for Axolotl (written into each run directory).

Axolotl loads it through the `plugins:` list of the run's `axolotl.yaml` (module
`overbrainer_metrics`, class `MetricsPlugin`; the job runs in the run directory and
puts it on `PYTHONPATH`). It adds one `transformers.TrainerCallback` that appends JSON lines to
`metrics.jsonl` next to this file (spec/training.md, MPL-1, MPL-2):

- `train`: each logged optimizer step (`step`, `max_steps`, `epoch`, `loss`,
  `learning_rate`, `grad_norm`);
- `eval`: each completed evaluation (`step`, `eval_loss` and every other `eval_*` value);
- `eval_progress`: during an evaluation, at most every 2 seconds (`step` = batches done,
  `total` = batches in all, or null when unknown);
- `end`: once, when the training loop is over (before Axolotl's final save);
- `snapshot`: after a snapshot checkpoint was saved (also written to `snapshot.json`).

Every line also has `ts` (UTC seconds since the epoch). Non-finite floats are written as the
strings "nan", "inf" and "-inf", since JSON has no literal for them.

Snapshot protocol (MPL-5): at the end of every optimizer step, rank 0 looks for
`snapshot.request` in the run directory and broadcasts the decision to every rank; when
present, training saves a full checkpoint (model or adapter, optimizer, scheduler, RNG state)
at that step and stops. Rank 0 then writes `snapshot.json` with `checkpoint` (the directory
name `checkpoint-N`), `step` and `reason` (the request's first word when it is one of
`requested`, `deadline`, `cost`, `disk`; `requested` otherwise), and the `snapshot` line
carries the same three. A request seen at or after the final step has no effect.

Hooks used: `BasePlugin.add_callbacks_post_trainer` (axolotl/integrations/base.py, Axolotl
0.19) and `TrainerCallback.on_log`, `on_evaluate`, `on_prediction_step`, `on_step_end`,
`on_save`, `on_train_end` (transformers/trainer_callback.py).
"""

import json
import math
import os
import time
from pathlib import Path

from axolotl.integrations.base import BasePlugin
from transformers import TrainerCallback

RUN_DIR = Path(__file__).resolve().parent
METRICS_FILE = RUN_DIR / "metrics.jsonl"
REQUEST_FILE = RUN_DIR / "snapshot.request"
SNAPSHOT_FILE = RUN_DIR / "snapshot.json"
EVAL_PROGRESS_INTERVAL_S = 2.0
REASONS = ("requested", "deadline", "cost", "disk", "stall")


def _clean(value):
    """A JSON-safe copy of a metric value: non-finite floats become strings."""
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return value
    try:
        number = float(value)
    except (TypeError, ValueError):
        return str(value)
    if math.isnan(number):
        return "nan"
    if math.isinf(number):
        return "inf" if number > 0 else "-inf"
    return number


def _request_reason():
    """The reason `snapshot.request` names (its first word), `requested` otherwise."""
    try:
        words = REQUEST_FILE.read_text(encoding="utf-8", errors="replace").split()
    except OSError:
        return "requested"
    return words[0] if words and words[0] in REASONS else "requested"


def _append(kind, **fields):
    """Appends one whole line to metrics.jsonl and flushes it to disk."""
    record = {"kind": kind, "ts": time.time()}
    record.update({key: _clean(value) for key, value in fields.items()})
    line = (json.dumps(record, allow_nan=False) + "\n").encode("utf-8")
    RUN_DIR.mkdir(parents=True, exist_ok=True)
    fd = os.open(METRICS_FILE, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)


def _replace(path, text):
    """Replaces a small file through a rename, so readers never see part of it."""
    temporary = path.with_name(path.name + ".tmp")
    with open(temporary, "w", encoding="utf-8") as file:
        file.write(text)
        file.flush()
        os.fsync(file.fileno())
    os.replace(temporary, path)


def _broadcast_flag(flag):
    """Rank 0's value of `flag` on every rank (plain value without distributed training)."""
    try:
        import torch
        import torch.distributed as dist
    except ImportError:
        return flag
    if not (dist.is_available() and dist.is_initialized()):
        return flag
    device = "cpu"
    if dist.get_backend() == "nccl":
        device = f"cuda:{torch.cuda.current_device()}"
    tensor = torch.tensor([1 if flag else 0], dtype=torch.int32, device=device)
    dist.broadcast(tensor, src=0)
    return bool(tensor.item())


class MetricsCallback(TrainerCallback):
    """Writes metrics.jsonl and honours snapshot.request."""

    def __init__(self):
        self.eval_done = 0
        self.eval_last_write = 0.0
        self.snapshot_step = None
        self.snapshot_reason = "requested"
        self.snapshot_written = False
        self.ended = False

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not state.is_world_process_zero or not logs or "loss" not in logs:
            return
        _append(
            "train",
            step=state.global_step,
            max_steps=state.max_steps,
            epoch=logs.get("epoch", state.epoch),
            loss=logs.get("loss"),
            learning_rate=logs.get("learning_rate"),
            grad_norm=logs.get("grad_norm"),
        )

    def on_prediction_step(self, args, state, control, **kwargs):
        self.eval_done += 1
        if not state.is_world_process_zero:
            return
        now = time.monotonic()
        if self.eval_done > 1 and now - self.eval_last_write < EVAL_PROGRESS_INTERVAL_S:
            return
        self.eval_last_write = now
        total = None
        loader = kwargs.get("eval_dataloader")
        if loader is not None:
            try:
                total = len(loader)
            except TypeError:
                total = None
        _append("eval_progress", step=self.eval_done, total=total)

    def on_evaluate(self, args, state, control, metrics=None, **kwargs):
        self.eval_done = 0
        self.eval_last_write = 0.0
        if not state.is_world_process_zero:
            return
        values = {key: value for key, value in (metrics or {}).items() if key.startswith("eval_")}
        _append("eval", step=state.global_step, **values)

    def on_step_end(self, args, state, control, **kwargs):
        if self.snapshot_step is not None:
            return
        requested = state.is_world_process_zero and REQUEST_FILE.exists()
        requested = _broadcast_flag(requested)
        if not requested or (state.max_steps and state.global_step >= state.max_steps):
            return
        self.snapshot_step = state.global_step
        if state.is_world_process_zero:
            self.snapshot_reason = _request_reason()
        control.should_save = True
        control.should_training_stop = True

    def on_save(self, args, state, control, **kwargs):
        if self.snapshot_step is None or state.global_step != self.snapshot_step:
            return
        if self.snapshot_written or not state.is_world_process_zero:
            return
        self.snapshot_written = True
        checkpoint = f"checkpoint-{state.global_step}"
        _replace(
            SNAPSHOT_FILE,
            json.dumps(
                {
                    "checkpoint": checkpoint,
                    "step": state.global_step,
                    "reason": self.snapshot_reason,
                }
            )
            + "\n",
        )
        _append(
            "snapshot",
            step=state.global_step,
            checkpoint=checkpoint,
            reason=self.snapshot_reason,
        )

    def on_train_end(self, args, state, control, **kwargs):
        if self.ended or not state.is_world_process_zero:
            return
        self.ended = True
        _append("end", step=state.global_step)


class MetricsPlugin(BasePlugin):
    """Adds the `MetricsCallback` to Axolotl's trainer."""

    def add_callbacks_post_trainer(self, cfg, trainer):
        return [MetricsCallback()]
