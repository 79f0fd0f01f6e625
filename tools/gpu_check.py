"""The check to run first whenever a GPU is at hand (issue 33): one command, well within 10 minutes.

1. The library's tests on CUDA (``tests/test_cuda.py`` and the GPU test of ``tests/test_fused.py``):
   projections and their gradients against the CPU, and without a host-device sync; attention in half
   precision, every model's forward pass, one mixed-precision training step per model, beam search.
2. One timed stretch of full-size training per experiment, on batches of the full profile's shapes (random
   token ids: a step's time does not depend on which tokens it sees), in float32 and with mixed precision:
   seconds per step, target tokens per second, and the peak GPU memory. With the steps per epoch of the
   full profile, these give the cost model of a full run.
3. The library's training loop (:func:`~sparse_tutorial.training.train`) on NMT batches of the medium and
   full sizes, reading the values it keeps on the device every step (as it did before issue 33) and every
   :data:`~sparse_tutorial.training.READ_EVERY` steps: what not waiting for the GPU at each step gains.
4. The medium NMT system's training step, eager and under ``torch.compile`` (seconds per step).
5. Every chapter in its quick profile with the GPU visible (``tools/book_tools.py execute --gpu`` on a copy
   of ``book/``, :data:`CHAPTER_WORKERS` at a time): chapters 9-11 then train on the GPU, and their asserts
   must hold there as they hold on any CPU. Chapter 10's three quick systems are trained side by side as the
   chapters start (:func:`start_quick_systems`).
6. One epoch of each experiment's first full-profile run through its real code (``execute``: the corpus,
   training on the GPU, decoding, the metrics), with every epoch count cut to 1 and the evaluation sets to
   :data:`EVALUATION_CAP` items; the experiments run side by side, each in its own process, so the seconds
   are an upper bound of a run's epoch there.

It writes ``gpu_check.json`` (into ``--out``, by default ``book/results``): the device, the test outcome and
the timings, which the reproducibility appendix's cost model reads. ``--parts`` runs some of the parts; the
others are then kept from the file already there, each part with the date it was measured. Without a GPU it
says so and exits 2; ``--allow-cpu`` runs it on the CPU anyway (to check the check).

    python tools/gpu_check.py                      # on the GPU machine, from the repository root
    python tools/gpu_check.py --out "$OUT"         # on the project's lent device machine
"""
from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import math
import os
import shutil
import subprocess
import tempfile
import sys
import time
from pathlib import Path
from typing import Any, Callable

import torch

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from sparse_tutorial import training  # noqa: E402
from sparse_tutorial.experiments import summarization  # noqa: E402
from sparse_tutorial.experiments.nmt import training as nmt_training  # noqa: E402
from sparse_tutorial.models.classifier import AttentionClassifier, meister_config  # noqa: E402
from sparse_tutorial.models.pointer_generator import PointerGenerator, PointerGeneratorConfig  # noqa: E402
from sparse_tutorial.models.seq2seq import make_batch, seq2seq_loss  # noqa: E402

STEPS, WARMUP = 10, 3
"""Timed steps per measurement, after the warm-up steps (``--steps``, ``--warmup``)."""
TEST_SECONDS = 240
"""The CUDA tests are stopped after this long."""
PIPELINES = ("nmt", "summarization", "classification", "interpretability", "explanation")
"""The experiments whose first full-profile run :func:`one_epoch` executes."""
EVALUATION_CAP = 200
"""Dev and test items kept in :func:`one_epoch` (the full profiles evaluate on 1,000-2,000)."""
CUT_TO_ONE = {"epochs"}
CUT_TO_CAP = {"n_dev", "n_test"}
PARTS = ("tests", "timings", "loop", "compile", "chapters", "one_epoch")
"""The parts of the check, in the order they run (``--parts``)."""
LOOP_STEPS = 64
"""Timed steps of the training loop per measurement (two reads' worth at ``READ_EVERY`` = 32)."""
CHAPTER_WORKERS = 4
"""Chapters executed at a time by :func:`chapters`."""
QUICK_SYSTEMS_CHAPTER = "10_sparse_nmt.ipynb"
"""The chapter whose quick systems :func:`chapters` trains side by side beforehand (:func:`start_quick_systems`)."""
KERNEL_START_GAP = 3.0
"""Seconds between two chapters' starts: kernels started together can pick the same free port (one of 14
chapters started at once failed so on 2026-11-28)."""


def run_tests(out: Path) -> dict[str, Any]:
    """pytest on the CUDA tests; its exit status, closing line, the tests that failed and the seconds."""
    tic = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
                           "tests/test_cuda.py", "tests/test_fused.py", "-k", "cuda or gpu"],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=TEST_SECONDS)
    (out / "gpu_check_tests.log").write_text(done.stdout + done.stderr)
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    failed = [line.split()[1] for line in lines if line.startswith("FAILED ")]
    return {"returncode": done.returncode, "summary": lines[-1] if lines else "", "failed": failed,
            "seconds": round(time.perf_counter() - tic, 1)}


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


def nmt_batches(profile: str, device: torch.device, count: int) -> list[Any]:
    """``count`` NMT batches of random piece ids at ``profile``'s sizes: its batch tokens in verses of 24 pieces
    (medium) or 40 (full), on ``device``."""
    sizes = nmt_training.SIZES[profile]
    vocab, length = sizes.corpus.vocab_size, min(40, sizes.corpus.max_len - 8)
    rows = sizes.batch_tokens // length
    batches = []
    for k in range(count):
        pairs = list(zip(random_ids(rows, length, vocab, 2 * k).tolist(),
                         random_ids(rows, length - 1, vocab, 2 * k + 1).tolist()))
        batches.append(type(make_batch(pairs, 1, 2))(*(t.to(device) for t in make_batch(pairs, 1, 2))))
    return batches


def loop_gain(device: torch.device, steps: int = LOOP_STEPS, profiles: tuple[str, ...] = ("medium", "full")
              ) -> dict[str, Any]:
    """Seconds per step of :func:`~sparse_tutorial.training.train` on NMT batches of ``profiles``' sizes,
    reading the device values every step and every ``READ_EVERY`` steps, each after a warm-up of 4 steps."""
    report: dict[str, Any] = {"steps": steps, "read_every": training.READ_EVERY}
    kept = training.READ_EVERY
    for profile in profiles:
        sizes = nmt_training.SIZES[profile]
        batches = nmt_batches(profile, device, steps)
        vocab = sizes.corpus.vocab_size
        seconds = {}
        for every in (1, kept, 1, kept):   # twice each, alternating: the second pair is the one kept
            model = nmt_training.build_model(nmt_training.SYSTEMS["NMT"], sizes, vocab, vocab)
            config = training.TrainConfig(epochs=1, lr=sizes.learning_rate, device=device, seed=0)
            training.READ_EVERY = every
            try:
                training.train(model, batches[:4], seq2seq_loss, config)   # warm-up: cuDNN plans, the allocator
                if device.type == "cuda":
                    torch.cuda.synchronize(device)
                tic = time.perf_counter()
                training.train(model, batches, seq2seq_loss, config)
                if device.type == "cuda":
                    torch.cuda.synchronize(device)
                seconds[every] = (time.perf_counter() - tic) / steps
            finally:
                training.READ_EVERY = kept
        report[profile] = {"seconds_per_step_read_every_step": round(seconds[1], 4),
                           f"seconds_per_step_read_every_{kept}": round(seconds[kept], 4),
                           "speed_up": round(seconds[1] / seconds[kept], 3),
                           "target_tokens_per_step": int(batches[0].tgt_mask.sum())}
    return report


def compiled_step(device: torch.device, steps: int = LOOP_STEPS) -> dict[str, Any]:
    """Seconds per training step of the medium NMT system, eager and under ``torch.compile``, on the same
    batches (the compiled model after a warm-up that compiles it)."""
    sizes = nmt_training.SIZES["medium"]
    batches = nmt_batches("medium", device, steps)
    vocab = sizes.corpus.vocab_size
    report: dict[str, Any] = {"steps": steps}
    for label, wrap in (("eager", lambda model: model), ("compiled", torch.compile)):
        torch.manual_seed(0)
        model = nmt_training.build_model(nmt_training.SYSTEMS["NMT"], sizes, vocab, vocab).to(device).train()
        compiled = wrap(model)
        optimizer = torch.optim.Adam(model.parameters(), lr=sizes.learning_rate)

        def step(batch: Any) -> None:
            optimizer.zero_grad(set_to_none=True)
            seq2seq_loss(compiled, batch)[0].backward()
            optimizer.step()

        for batch in batches[:3]:  # warm-up: compilation, cuDNN plans, the allocator
            step(batch)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        tic = time.perf_counter()
        for batch in batches:
            step(batch)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        report[f"seconds_per_step_{label}"] = round((time.perf_counter() - tic) / steps, 4)
    report["speed_up"] = round(report["seconds_per_step_eager"] / report["seconds_per_step_compiled"], 3)
    return report


def chapter_paths() -> list[Path]:
    """The book's chapters, in book order (``tools/book_tools.py list``)."""
    listed = subprocess.run([sys.executable, str(REPO_ROOT / "tools" / "book_tools.py"), "list"], cwd=REPO_ROOT,
                            capture_output=True, text=True, check=True)
    return [REPO_ROOT / line for line in listed.stdout.split()]


def train_quick_system(name: str) -> None:
    """Chapter 10's quick system ``name`` (seed 0) trained on this machine's device into the checkpoint cache,
    by the chapter's own :func:`~sparse_tutorial.experiments.nmt.checkpoints.trained_system`."""
    from sparse_tutorial import default_device
    from sparse_tutorial.experiments.nmt.checkpoints import trained_system
    from sparse_tutorial.experiments.nmt.data import load_translation_data

    trained_system(name, "quick", 0, load_translation_data(nmt_training.SIZES["quick"].corpus), default_device())


def start_quick_systems(environment: dict[str, str], log: Path) -> list[subprocess.Popen]:
    """:func:`train_quick_system` of each of chapter 10's quick systems, side by side in processes of their own.
    On a GPU, whose small steps wait on kernel launches, they then take the time of the slowest (117-180 s on
    an H200) instead of the sum, which left chapter 10 alone past five minutes; the chapter waits on the
    checkpoint's lock and loads what they stored."""
    with log.open("w") as output:
        return [subprocess.Popen([sys.executable, __file__, "--quick-system", name], cwd=REPO_ROOT, env=environment,
                                 stdout=output, stderr=subprocess.STDOUT)
                for name in nmt_training.SIZES["quick"].systems]


def tally(runs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The chapters' results ``runs`` (name -> its run) with how many of them passed."""
    return {"passed": sum(run["returncode"] == 0 for run in runs.values()), "of": len(runs), "chapters": runs}


def chapters(out: Path, seconds: float, workers: int = CHAPTER_WORKERS,
             paths: list[Path] | None = None) -> dict[str, Any]:
    """Every chapter (or ``paths``) in its quick profile with the GPU visible, ``workers`` at a time, on a copy of
    ``book/`` (the stored outputs stay the CPU's); those not finished within ``seconds`` are stopped. Per
    chapter: the exit status, the seconds and, when it failed, the end of what it printed; the whole output
    goes to ``gpu_check_chapters.log``."""
    paths = paths if paths is not None else chapter_paths()
    copy = Path(tempfile.mkdtemp(prefix="gpu_check_book_"))
    shutil.copytree(REPO_ROOT / "book", copy / "book")
    queue = [(path, copy / path.relative_to(REPO_ROOT)) for path in paths]
    search_path = os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))
    environment = {**os.environ, "PYTHONPATH": search_path}
    deadline, running, report, logs = time.perf_counter() + seconds, {}, {}, []
    trainers = (start_quick_systems(environment, out / "gpu_check_quick_systems.log")
                if any(path.name == QUICK_SYSTEMS_CHAPTER for path in paths) else [])
    while queue or running:
        if time.perf_counter() >= deadline:   # the chapters still queued are not started
            report.update({str(path.relative_to(REPO_ROOT / "book")): {"returncode": None, "error": ["not started"]}
                           for path, _ in queue})
            queue = []
        while queue and len(running) < workers:
            path, copied = queue.pop(0)
            left = int(max(1, deadline - time.perf_counter()))
            output_file = copied.with_suffix(".out")   # a file, not a pipe: a chapter never waits on a full pipe
            with output_file.open("w") as output:
                process = subprocess.Popen([sys.executable, str(REPO_ROOT / "tools" / "book_tools.py"), "execute",
                                            str(copied), "--gpu", "--timeout", str(left)],
                                           cwd=REPO_ROOT, env=environment, stdout=output, stderr=subprocess.STDOUT)
            running[path] = (process, time.perf_counter(), output_file)
            time.sleep(KERNEL_START_GAP)
        for path, (process, started, output_file) in list(running.items()):
            if process.poll() is None and time.perf_counter() < deadline:
                continue
            if process.poll() is None:
                process.kill()
            process.wait()
            output = output_file.read_text(errors="replace")
            name = str(path.relative_to(REPO_ROOT / "book"))
            report[name] = {"returncode": process.returncode, "seconds": round(time.perf_counter() - started, 1)}
            if process.returncode != 0:
                report[name]["error"] = output.strip().splitlines()[-6:] if output.strip() else ["(no output)"]
            logs.append(f"===== {name} (exit {process.returncode})\n{output}")
            del running[path]
        time.sleep(0.5)
    for trainer in trainers:   # done unless every chapter stopped first
        trainer.kill()
        trainer.wait()
    shutil.rmtree(copy, ignore_errors=True)
    (out / "gpu_check_chapters.log").write_text("\n".join(logs))
    return tally(report)


def one_epoch_sizes(sizes: Any) -> Any:
    """``sizes`` with every field in :data:`CUT_TO_ONE` set to 1 and every one in :data:`CUT_TO_CAP` capped at
    :data:`EVALUATION_CAP`, through nested dataclasses and dicts of them."""
    if isinstance(sizes, dict):
        return {key: one_epoch_sizes(value) for key, value in sizes.items()}
    if not dataclasses.is_dataclass(sizes):
        return sizes
    changes: dict[str, Any] = {}
    for field in dataclasses.fields(sizes):
        value = getattr(sizes, field.name)
        if field.name in CUT_TO_ONE and isinstance(value, int):
            changes[field.name] = 1
        elif field.name in CUT_TO_CAP and isinstance(value, int):
            changes[field.name] = min(value, EVALUATION_CAP)
        elif dataclasses.is_dataclass(value) or isinstance(value, dict):
            changes[field.name] = one_epoch_sizes(value)
    return dataclasses.replace(sizes, **changes)


def scalars(value: Any, depth: int = 2) -> Any:
    """The numbers and short strings of a run's result, ``depth`` levels down (lists left out; NaN as ``None``)."""
    if isinstance(value, dict) and depth:
        kept = {key: scalars(item, depth - 1) for key, item in value.items()}
        return {key: item for key, item in kept.items() if item is not None}
    if isinstance(value, float) and not math.isfinite(value):
        return None   # strict JSON
    if isinstance(value, (int, float, bool)) or (isinstance(value, str) and len(value) < 80):
        return value
    return None


def one_epoch(name: str) -> dict[str, Any]:
    """Execute experiment ``name``'s first full-profile run, cut by :func:`one_epoch_sizes`."""
    module = importlib.import_module(f"sparse_tutorial.experiments.{name}")
    module.SIZES["full"] = one_epoch_sizes(module.SIZES["full"])   # nmt's SIZES is nmt_training's
    tic = time.perf_counter()
    run = module.grid("full", 1)[0]
    loaded = time.perf_counter() - tic
    result = module.execute(run)
    return {"run": {"kind": run.kind, **dict(run.config)}, "load_seconds": round(loaded, 1),
            "run_seconds": round(time.perf_counter() - tic - loaded, 1), "result": scalars(result)}


def pipelines(out: Path, seconds: float) -> dict[str, Any]:
    """:func:`one_epoch` of every :data:`PIPELINES` experiment, side by side, each in a process of its own
    stopped after ``seconds``; their output goes to ``gpu_check_pipelines.log``."""
    processes = {name: subprocess.Popen([sys.executable, __file__, "--one-epoch", name, "--out", str(out)],
                                        cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                 for name in PIPELINES}
    deadline, report, logs = time.perf_counter() + seconds, {}, []
    for name, process in processes.items():
        try:
            output, _ = process.communicate(timeout=max(1.0, deadline - time.perf_counter()))
        except subprocess.TimeoutExpired:
            process.kill()
            output, _ = process.communicate()
            report[name] = {"error": f"stopped after {seconds:.0f} s"}
        logs.append(f"===== {name} (exit {process.returncode})\n{output}")
        result_file = out / f"gpu_epoch_{name}.json"
        if result_file.is_file():
            report[name] = json.loads(result_file.read_text())
            result_file.unlink()
        elif name not in report:
            report[name] = {"error": f"exit {process.returncode}; see gpu_check_pipelines.log"}
    (out / "gpu_check_pipelines.log").write_text("\n".join(logs))
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "book" / "results")
    parser.add_argument("--allow-cpu", action="store_true", help="run on the CPU when there is no GPU")
    parser.add_argument("--parts", default=",".join(PARTS),
                        help=f"comma-separated parts to run, of {', '.join(PARTS)} (default: all)")
    parser.add_argument("--steps", type=int, default=STEPS, help=f"timed steps per measurement (default {STEPS})")
    parser.add_argument("--warmup", type=int, default=WARMUP, help=f"untimed steps first (default {WARMUP})")
    parser.add_argument("--chapter-seconds", type=float, default=300.0,
                        help="how long the chapters may take together (default 300)")
    parser.add_argument("--chapter", action="append", type=Path, default=None,
                        help="a chapter to execute (repeat it; in this order; the other chapters' results are kept, each "
                             "with its date); default: every chapter, in book order")
    parser.add_argument("--chapter-workers", type=int, default=CHAPTER_WORKERS,
                        help=f"chapters executed at a time (default {CHAPTER_WORKERS})")
    parser.add_argument("--pipeline-seconds", type=float, default=300.0,
                        help="how long the one-epoch runs of the experiments may take together (default 300)")
    parser.add_argument("--one-epoch", choices=PIPELINES, help=argparse.SUPPRESS)
    parser.add_argument("--quick-system", choices=nmt_training.SIZES["quick"].systems, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    parts = [part.strip() for part in args.parts.split(",") if part.strip()]
    unknown = sorted(set(parts) - set(PARTS))
    if unknown or not parts:
        parser.error(f"--parts: unknown {', '.join(unknown) or '(none given)'}; choose from {', '.join(PARTS)}")
    if args.quick_system:
        train_quick_system(args.quick_system)
        return 0
    if args.one_epoch:
        (args.out / f"gpu_epoch_{args.one_epoch}.json").write_text(json.dumps(one_epoch(args.one_epoch), indent=1))
        return 0
    if not torch.cuda.is_available() and not args.allow_cpu:
        print("gpu_check: no CUDA device here; run it on a GPU machine (or pass --allow-cpu to check the check)",
              file=sys.stderr)
        return 2
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "gpu_check.json"
    report: dict[str, Any] = json.loads(path.read_text()) if path.is_file() else {}
    measured = {"device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
                "torch": torch.__version__, "date": time.strftime("%Y-%m-%d", time.gmtime())}
    if "tests" in parts:
        report["tests"] = {**measured, "cuda": torch.version.cuda, **run_tests(args.out)}
        print("tests:", report["tests"]["summary"], flush=True)
    if "timings" in parts:
        report.update(measured, cuda=torch.version.cuda, timings={})
        for name, time_it in experiments(device, args.steps, args.warmup).items():
            report["timings"][name] = {precision: time_it(precision == "amp") for precision in ("float32", "amp")}
            print(name, report["timings"][name], flush=True)
    if "loop" in parts:
        report["loop"] = {**measured, **loop_gain(device)}
        print("loop:", report["loop"], flush=True)
    if "compile" in parts:
        report["compile"] = {**measured, **compiled_step(device)}
        print("compile:", report["compile"], flush=True)
    path.write_text(json.dumps(report, indent=1) + "\n")
    if "chapters" in parts:
        chosen = [path.resolve() for path in args.chapter] if args.chapter else None
        ran = chapters(args.out, args.chapter_seconds, args.chapter_workers, chosen)["chapters"]
        before = report.get("chapters", {}) if chosen else {}  # --chapter: the other chapters' entries stay
        kept = {name: {"date": before.get("date"), **run} for name, run in before.get("chapters", {}).items()}
        merged = {**kept, **{name: {**run, "date": measured["date"]} for name, run in ran.items()}}
        report["chapters"] = {**measured, **tally(merged)}
        print("chapters:", json.dumps(report["chapters"], indent=1), flush=True)
        path.write_text(json.dumps(report, indent=1) + "\n")
    if "one_epoch" in parts:
        report["one_epoch"] = pipelines(args.out, args.pipeline_seconds)
        print(json.dumps(report["one_epoch"], indent=1), flush=True)
    report["command"] = "python tools/gpu_check.py " + " ".join(argv if argv is not None else sys.argv[1:])
    path.write_text(json.dumps(report, indent=1) + "\n")
    failed = [name for name, run in report.get("chapters", {}).get("chapters", {}).items() if run["returncode"]]
    print(f"tests: {report.get('tests', {}).get('summary')}; chapters failed: {failed or 'none'}; wrote {path}")
    return 0 if report.get("tests", {}).get("returncode") == 0 and not failed else 1


if __name__ == "__main__":
    raise SystemExit(main())
