"""The check to run first whenever a GPU is at hand (issue 33): one command, well within 10 minutes.

1. The library's tests on CUDA (``tests/test_cuda.py`` and the GPU test of ``tests/test_fused.py``):
   projections and their gradients against the CPU, attention in half precision, every model's forward
   pass, one mixed-precision training step per model, beam search.
2. One timed stretch of full-size training per experiment, on batches of the full profile's shapes (random
   token ids: a step's time does not depend on which tokens it sees), in float32 and with mixed precision:
   seconds per step, target tokens per second, and the peak GPU memory. With the steps per epoch of the
   full profile, these give the cost model of a full run.

It writes ``gpu_check.json`` (into ``--out``, by default ``book/results``): the device, the test outcome and
the timings, which the reproducibility appendix's cost model reads. Without a GPU it says so and exits 2;
``--allow-cpu`` runs it on the CPU anyway (to check the check).

    python tools/gpu_check.py                      # on the GPU machine, from the repository root
    python tools/gpu_check.py --out "$OUT"         # on the project's lent device machine
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

import torch

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from sparse_tutorial.experiments import nmt_training, summarization  # noqa: E402
from sparse_tutorial.models.classifier import AttentionClassifier, meister_config  # noqa: E402
from sparse_tutorial.models.pointer_generator import PointerGenerator, PointerGeneratorConfig  # noqa: E402
from sparse_tutorial.models.seq2seq import make_batch, seq2seq_loss  # noqa: E402

STEPS, WARMUP = 10, 3
"""Timed steps per measurement, after the warm-up steps (``--steps``, ``--warmup``)."""


def run_tests(out: Path) -> dict[str, Any]:
    """pytest on the CUDA tests; its exit status, closing line and seconds."""
    tic = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
                           "tests/test_cuda.py", "tests/test_fused.py", "-k", "cuda or gpu"],
                          cwd=REPO_ROOT, capture_output=True, text=True)
    (out / "gpu_check_tests.log").write_text(done.stdout + done.stderr)
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    return {"returncode": done.returncode, "summary": lines[-1] if lines else "", "seconds": round(time.perf_counter() - tic, 1)}


def timed(step: Callable[[], torch.Tensor], device: torch.device, tokens: int, steps: int = STEPS,
          warmup: int = WARMUP) -> dict[str, float]:
    """Median seconds of ``step()`` (forward, backward and an Adam update) over ``steps`` after ``warmup``."""
    seconds: list[float] = []
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    for k in range(warmup + steps):
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        tic = time.perf_counter()
        step()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        if k >= warmup:
            seconds.append(time.perf_counter() - tic)
    median = sorted(seconds)[len(seconds) // 2]
    peak = torch.cuda.max_memory_allocated(device) / 2 ** 30 if device.type == "cuda" else None
    return {"seconds_per_step": round(median, 4), "tokens_per_step": tokens,
            "tokens_per_second": round(tokens / median, 1), "peak_memory_gib": peak and round(peak, 2)}


def training_step(model: torch.nn.Module, loss: Callable[[], torch.Tensor], device: torch.device,
                  amp: bool) -> Callable[[], torch.Tensor]:
    """One optimizer step of ``loss`` on ``model`` (float16 autocast and a gradient scaler with ``amp``)."""
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
    scaler = torch.amp.GradScaler(device.type, enabled=amp and device.type == "cuda")

    def step() -> torch.Tensor:
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=amp and device.type == "cuda"):
            value = loss()
        scaler.scale(value).backward()
        scaler.step(optimizer)
        scaler.update()
        return value
    return step


def random_ids(rows: int, length: int, vocab: int, seed: int) -> torch.Tensor:
    return torch.randint(4, vocab, (rows, length), generator=torch.Generator().manual_seed(seed))


def experiments(device: torch.device, steps: int = STEPS, warmup: int = WARMUP
                ) -> dict[str, Callable[[bool], dict[str, float]]]:
    """Per experiment, a function timing full-size training at ``amp`` on batches of its full shapes."""
    def nmt(amp: bool) -> dict[str, float]:
        sizes = nmt_training.SIZES["full"]
        vocab, length = sizes.corpus.vocab_size, 40  # BPE pieces; the full profile keeps verses of up to 64
        rows = sizes.batch_tokens // length
        pairs = list(zip(random_ids(rows, length, vocab, 0).tolist(), random_ids(rows, length - 1, vocab, 1).tolist()))
        batch = type(make_batch(pairs, 1, 2))(*(t.to(device) for t in make_batch(pairs, 1, 2)))
        model = nmt_training.build_model(nmt_training.SYSTEMS["+Cov+Ent"], sizes, vocab, vocab).to(device).train()
        step = training_step(model, lambda: seq2seq_loss(model, batch, penalty="entropy", lam=0.01)[0], device, amp)
        return timed(step, device, int(batch.tgt_mask.sum()), steps, warmup)

    def summarization_(amp: bool) -> dict[str, float]:
        sizes = summarization.SIZES["full"]
        rows, source, target = sizes.batch_size, sizes.max_source_len, sizes.max_target_len
        model = PointerGenerator(PointerGeneratorConfig(vocab_size=sizes.vocab_size, embedding_dim=sizes.embedding_dim,
                                                        hidden_dim=sizes.hidden_dim, attention_dim=sizes.hidden_dim,
                                                        coverage=True)).to(device).train()
        ids = random_ids(rows, source, sizes.vocab_size, 2).to(device)
        mask = torch.ones_like(ids, dtype=torch.bool)
        targets = random_ids(rows, target + 1, sizes.vocab_size, 3).to(device)

        def loss() -> torch.Tensor:
            output = model(ids, mask, targets[:, :-1], ids, sizes.vocab_size)
            return -output.log_probs.gather(-1, targets[:, 1:].unsqueeze(-1)).mean()
        return timed(training_step(model, loss, device, amp), device, rows * target, steps, warmup)

    def classification_(amp: bool) -> dict[str, float]:
        rows, length, vocab = 32, 400, 30000  # 20 Newsgroups posts are cut to 400 tokens
        model = AttentionClassifier(meister_config("bilstm", vocab, projection="sparsemax", embed_dim=128,
                                                   hidden_dim=128)).to(device).train()
        ids = random_ids(rows, length, vocab, 4).to(device)
        mask = torch.ones_like(ids, dtype=torch.bool)
        labels = (torch.arange(rows, device=device) % 2).float()

        def loss() -> torch.Tensor:
            logits = model(ids, mask).logits.float()
            return torch.nn.functional.binary_cross_entropy_with_logits(logits, labels)
        return timed(training_step(model, loss, device, amp), device, rows * length, steps, warmup)

    return {"nmt": nmt, "summarization": summarization_, "classification": classification_}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "book" / "results")
    parser.add_argument("--allow-cpu", action="store_true", help="run on the CPU when there is no GPU")
    parser.add_argument("--steps", type=int, default=STEPS, help=f"timed steps per measurement (default {STEPS})")
    parser.add_argument("--warmup", type=int, default=WARMUP, help=f"untimed steps first (default {WARMUP})")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available() and not args.allow_cpu:
        print("gpu_check: no CUDA device here; run it on a GPU machine (or pass --allow-cpu to check the check)",
              file=sys.stderr)
        return 2
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    args.out.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "torch": torch.__version__, "cuda": torch.version.cuda, "tests": run_tests(args.out), "timings": {}}
    for name, time_it in experiments(device, args.steps, args.warmup).items():
        report["timings"][name] = {precision: time_it(precision == "amp") for precision in ("float32", "amp")}
        print(name, report["timings"][name], flush=True)
    (args.out / "gpu_check.json").write_text(json.dumps(report, indent=1) + "\n")
    print(f"tests: {report['tests']['summary']}; wrote {args.out / 'gpu_check.json'}")
    return 0 if report["tests"]["returncode"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
