from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from torch import nn

from linker.biosyn import make_training_queries, train_biosyn
from linker.dictionary import NameTable
from linker.encoders import TransformerEncoder
from linker.pretrain import pretrain_synonyms, synonym_pairs
from linker.sparse import SparseEncoder
from linker.train import BioSynConfig, SynonymPretrainConfig, Trainer, TrainerConfig


class _ToyTask:
    """y = 2x with a one-weight model: enough to watch the trainer drive any task."""

    def __init__(self) -> None:
        self.module: nn.Module = nn.Linear(1, 1, bias=False)
        self.x = torch.linspace(-1, 1, 32).unsqueeze(1)

    def parameter_groups(self) -> list[dict[str, Any]]:
        return [{"params": list(self.module.parameters())}]

    def prepare_epoch(self, epoch: int, device: torch.device) -> list[torch.Tensor]:
        return list(self.x.split(8))

    def batch_loss(self, batch: torch.Tensor, device: torch.device) -> tuple[torch.Tensor, int]:
        return ((self.module(batch.to(device)) - 2 * batch.to(device)) ** 2).mean(), len(batch)

    def save(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        torch.save(self.module.state_dict(), folder / "toy.pt")


def test_trainer_reports_progress_and_writes_checkpoints(tmp_path: Path) -> None:
    steps: list[dict[str, Any]] = []
    epochs: list[dict[str, Any]] = []
    trainer = Trainer(TrainerConfig(lr=0.1, epochs=3, progress_bar=False), device="cpu",
                      checkpoint_dir=tmp_path, on_step=steps.append, on_epoch_end=epochs.append, log_every=1)
    history = trainer.fit(_ToyTask())
    assert [s["step"] for s in steps] == list(range(1, 13))
    assert {"epoch", "step", "total_steps", "loss", "mentions_per_s"} <= set(steps[0])
    assert steps[0]["total_steps"] == 12
    assert [e["epoch"] for e in epochs] == [1, 2, 3] and history == epochs
    assert epochs[-1]["loss"] < epochs[0]["loss"]
    assert (tmp_path / "epoch-3" / "toy.pt").exists()


def test_synonym_pairs_come_from_concepts_with_two_names(tiny_table: NameTable) -> None:
    pairs = synonym_pairs(tiny_table)
    by_label: dict[int, set[str]] = {}
    for a, b, label in pairs:
        assert a != b
        by_label.setdefault(label, set()).update((a, b))
    assert all(len(names) >= 2 for names in by_label.values())
    assert len(synonym_pairs(tiny_table, max_pairs=5)) == 5


def test_head_scope_pretraining_and_biosyn_train_and_learn_lambda(
    minilm: TransformerEncoder, tiny_table: NameTable, tmp_path: Path
) -> None:
    encoder = copy.deepcopy(minilm)
    before = encoder.encode(["heart attack"])
    pretrain_synonyms(encoder, tiny_table, SynonymPretrainConfig(batch_size=8, feature_cache=str(tmp_path),
                                                                 train_scope="head"))
    assert encoder.head is not None
    assert all(not p.requires_grad for p in encoder.model.parameters())  # transformer frozen
    sparse = SparseEncoder().fit(tiny_table.names)
    queries = make_training_queries(
        [("adult diabetes", "D003924"), ("breast carcinoma", "D001943"), ("kahler disease", "D009101")], tiny_table
    )
    epochs: list[dict[str, Any]] = []
    model, history = train_biosyn(encoder, tiny_table, sparse, queries,
                                  BioSynConfig(topk=6, epochs=4, feature_cache=str(tmp_path), train_scope="head"),
                                  on_epoch_end=epochs.append)
    assert len(history) == 4 and history[-1]["loss"] < history[0]["loss"]
    assert history[-1]["candidate_recall"] == 1.0
    assert float(model.sparse_weight.detach()) > 0.0  # λ starts at 0 and is learned
    assert not np.allclose(encoder.encode(["heart attack"]), before)
    # Saved and loaded with its head, the encoder gives the same vectors.
    encoder.save(tmp_path / "enc")
    np.testing.assert_allclose(TransformerEncoder.load(tmp_path / "enc").encode(["heart attack"]),
                               encoder.encode(["heart attack"]), atol=1e-5)


def test_student_scope_fine_tunes_every_kept_layer_and_saves_a_small_model(
    tiny_table: NameTable, tmp_path: Path
) -> None:
    from linker.train import STUDENT_LAYERS

    encoder = TransformerEncoder(layers=STUDENT_LAYERS)
    first_layer = encoder.model.encoder.layer[0].attention.self.query.weight.detach().clone()
    sparse = SparseEncoder().fit(tiny_table.names)
    queries = make_training_queries(
        [("adult diabetes", "D003924"), ("breast carcinoma", "D001943"), ("kahler disease", "D009101")], tiny_table
    )
    model, history = train_biosyn(encoder, tiny_table, sparse, queries,
                                  BioSynConfig(topk=6, epochs=2, lr=1e-4, batch_size=3, train_scope="student"))
    assert len(history) == 2 and encoder.head is None
    # Full fine-tuning: the transformer's own weights moved, not a head on top of them.
    assert not torch.equal(encoder.model.encoder.layer[0].attention.self.query.weight, first_layer)
    encoder.save(tmp_path / "student")
    assert TransformerEncoder.load(tmp_path / "student").num_layers == len(STUDENT_LAYERS)


def test_auto_scope_is_the_paper_on_a_gpu_and_the_student_on_a_cpu() -> None:
    from linker.train import SCOPE_DEFAULTS, resolve_scope

    assert resolve_scope("auto", "cpu") == "student"
    assert resolve_scope("auto", "cuda") == "full"
    assert resolve_scope("head", "cpu") == "head"
    assert SCOPE_DEFAULTS["full"].epochs == 10 and SCOPE_DEFAULTS["full"].lr == 1e-5  # the paper
    with pytest.raises(ValueError, match="train_scope"):
        resolve_scope("tiny", "cpu")
