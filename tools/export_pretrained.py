"""Train the shipped models and write them to ``sparse_tutorial/pretrained/weights/`` (package data) with
their SHA-256 in ``sparse_tutorial/pretrained/shipped.json``.

    python tools/export_pretrained.py                # every model of MODELS (hours of one CPU core)
    python tools/export_pretrained.py --dtype float32 nmt/NMT

Weights are stored in float16 (half the bytes), but a translator whose kept verses' BLEU float16 moves by
more than :data:`HALF_PRECISION_TOLERANCE` is stored in float32.

Each model is trained from scratch with seed 0 at the medium size, on one thread, with its stored run's
protocol (the translation systems through :func:`~sparse_tutorial.experiments.nmt.checkpoints.trained_system`,
which caches them; the pointer-generator through the experiment's ``train_system``). The file records the
stored run, the commit that trained it, and an evaluation: a translator's BLEU on the test verses in float32
and as shipped beside the stored run's, and its float32 translations of the first :data:`KEPT_OUTPUTS` test
verses (a summarizer: its float32 summaries of the first :data:`KEPT_OUTPUTS` test documents), which a
loaded model must reproduce (``tests/test_pretrained.py``). Training on another CPU than the stored run's
takes another path through its 17 epochs, so a model trained here is not the stored run's model to the bit:
the evaluation says how far its BLEU is from the stored run's.
"""
from __future__ import annotations

import argparse
import json
import subprocess
from dataclasses import asdict
from pathlib import Path

import torch

from sparse_tutorial import pretrained
from sparse_tutorial.experiments import nmt, summarization
from sparse_tutorial.experiments.nmt.checkpoints import trained_system
from sparse_tutorial.experiments.nmt.data import translation_corpus
from sparse_tutorial.experiments.nmt.training import SIZES, SYSTEMS
from sparse_tutorial.metrics import corpus_bleu
from sparse_tutorial.pretrained.models import Translator, from_file, save
from sparse_tutorial.runs.sweep import Run

ROOT = Path(__file__).resolve().parents[1]
MODELS = ("nmt/NMT", "nmt/+Sparsemax", "nmt/+Entropy", "nmt/+Entropy from epoch 3",
          "summarization/ABS+Pointer+Cov")
"""``experiment/system`` of every shipped model."""
PROFILE, SEED = "medium", 0
KEPT_OUTPUTS = 100
"""Test items whose float32 outputs a shipped model's file keeps."""
HALF_PRECISION_TOLERANCE = 0.1
"""A translator ships in float16 only when that moves the BLEU of the kept verses by at most this much (the
test's bar); otherwise in float32."""


def file_name(experiment: str, system: str) -> str:
    """``nmt-entropy-from-epoch-3.safetensors`` for ``("nmt", "+Entropy from epoch 3")``."""
    slug = "-".join("".join(c if c.isalnum() else " " for c in system.lower()).split())
    return f"{experiment}-{slug}.safetensors"


def provenance(run: Run, experiment: str) -> dict[str, str]:
    """The stored run record the model reproduces and the commit that trains it."""
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    record = ROOT / "book" / "results" / "runs" / f"{experiment}-{PROFILE}" / f"{run.key}.json"
    if not record.exists():
        raise SystemExit(f"no stored run record {record}: the model would reproduce nothing")
    return {"run": str(record.relative_to(ROOT)), "commit": commit, "profile": PROFILE, "seed": str(SEED)}


def _bleu(translator: Translator, pairs: list) -> tuple[list[str], float]:
    """``translator``'s translations of ``pairs`` (texts) and their corpus BLEU."""
    texts = [t.text for t in translator.translate_pieces([p.source for p in pairs])]
    return texts, corpus_bleu(texts, [p.references for p in pairs])


def export(experiment: str, system: str, dtype: torch.dtype, folder: Path) -> Path:
    """Train (or load from the cache) ``system``, evaluate it and write its file into ``folder``."""
    path = folder / file_name(experiment, system)
    if experiment == "nmt":
        data = translation_corpus(SIZES[PROFILE].corpus)
        trained = trained_system(system, PROFILE, SEED, data, "cpu")
        run = nmt.system_run(PROFILE, SYSTEMS[system], SEED)
        config = {"experiment": experiment, "system": system, "sizes": {"beam_size": SIZES[PROFILE].beam_size},
                  "provenance": provenance(run, experiment), "best_epoch": trained.history.best_epoch}
        stored = json.loads((ROOT / config["provenance"]["run"]).read_text(encoding="utf-8"))["result"]
        outputs, bleu = _bleu(Translator(trained.model, data.src_vocab, config), data.test)  # type: ignore[arg-type]
        config["evaluation"] = {"test_verses": len(data.test), "bleu_float32": round(bleu, 2),
                                "stored_run_bleu": round(stored["metrics"]["bleu"], 2),
                                "stored_run_best_epoch": stored["best_epoch"], "outputs_float32": outputs[:KEPT_OUTPUTS]}
        save(path, trained.model, config, dtype, vocabulary=data.src_vocab)  # type: ignore[arg-type]
        shipped, bleu_shipped = _bleu(from_file(path), data.test)  # type: ignore[arg-type]
        kept = data.test[:KEPT_OUTPUTS]
        moved = abs(corpus_bleu(shipped[:KEPT_OUTPUTS], [p.references for p in kept])
                    - corpus_bleu(outputs[:KEPT_OUTPUTS], [p.references for p in kept]))
        if dtype == torch.float16 and moved > HALF_PRECISION_TOLERANCE:  # half precision changes a reported number
            dtype, bleu_shipped = torch.float32, bleu
        config["evaluation"]["bleu_as_shipped"] = round(bleu_shipped, 2)
        save(path, trained.model, config, dtype, vocabulary=data.src_vocab)  # type: ignore[arg-type]
    else:
        sizes = summarization.SIZES[PROFILE]
        data = summarization.load_data(sizes)
        model, history = summarization.train_system(summarization.SYSTEMS[system], sizes, data.train, data.dev,
                                                    data.vocab, SEED, torch.device("cpu"))
        run = Run.of("system", profile=PROFILE, name=system, seed=SEED)
        kept = data.test[:KEPT_OUTPUTS]
        summaries = summarization.summarize(model, kept, data.vocab, sizes)
        config = {"experiment": experiment, "system": system, "sizes": asdict(sizes),
                  "tokens": data.vocab.itos, "provenance": provenance(run, experiment),
                  "best_epoch": history.best_epoch,
                  "evaluation": {"outputs_float32": [" ".join(s.tokens) for s in summaries]}}
        save(path, model, config, dtype)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="*", default=list(MODELS), help="experiment/system (default: all)")
    parser.add_argument("--dtype", choices=("float16", "float32"), default="float16")
    args = parser.parse_args()
    torch.set_num_threads(1)  # the stored runs' thread count: the same model to the last bit
    folder = pretrained.WEIGHTS_FOLDER
    folder.mkdir(exist_ok=True)
    manifest_path = Path(pretrained.__file__).with_name("shipped.json")
    manifest = {(e["experiment"], e["system"]): e for e in json.loads(manifest_path.read_text(encoding="utf-8"))}
    for name in args.models:
        experiment, system = name.split("/", 1)
        path = export(experiment, system, getattr(torch, args.dtype), folder)
        manifest[(experiment, system)] = {"experiment": experiment, "system": system, "file": path.name,
                                          "sha256": pretrained.sha256(path), "bytes": path.stat().st_size}
        print(f"{path.relative_to(ROOT)}: {path.stat().st_size / 1e6:.2f} MB")
    ordered = [manifest[key] for key in sorted(manifest, key=lambda k: MODELS.index(f"{k[0]}/{k[1]}"))]
    manifest_path.write_text(json.dumps(ordered, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
