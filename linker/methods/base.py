"""What every training method shares: its plain-data inputs, its callbacks, and its entry in the table.

A method is a :class:`Method`: a name and label, the dataclass of its parameters (what a person sets, with help
text: :mod:`linker.methods.params`), how they make its configuration, a function that trains into a folder and
returns its report, and what that folder is. :mod:`linker.recipe` keeps the table of methods and publishes the
folder; a form, an API or a command line built on the table needs nothing else to offer a method.

Plain data: importing this module imports no torch (the web app's forms and inputs read it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from linker.data import PubTatorDocument
from linker.dictionary import NameTable

if TYPE_CHECKING:  # the linker and the trainer import torch and faiss: this table of plain data does not (issue #45)
    from linker.hierarchy.graph import HierarchySource
    from linker.linker import Linker
    from linker.train import ProgressCallback

__all__ = ["TrainingInputs", "TrainingCallbacks", "RunContext", "Method", "Report", "prior_counts", "OUTPUTS"]

Report = dict[str, Any]
C = TypeVar("C")

# What a method's artifact folder is: a linker (an index serves it), a base encoder that other runs start from,
# word vectors that other runs start from, or a mention detector.
LINKER, BASE_ENCODER, WORD_VECTORS, DETECTOR = "linker", "base_encoder", "word_vectors", "detector"
OUTPUTS = (LINKER, BASE_ENCODER, WORD_VECTORS, DETECTOR)


@dataclass(frozen=True)
class TrainingInputs:
    """Plain data in: the dictionary, the training pairs, the prior's evidence, where the artifact goes.

    ``pairs`` are (normalised mention text, concept id); ``concept_counts`` are made by :func:`prior_counts`;
    ``metadata`` (JSON-able: the files or the run it came from) is copied into the artifact and the report.
    """

    table: NameTable
    pairs: Sequence[tuple[str, str]]
    concept_counts: Mapping[str, int]
    out: Path
    base_model: str | Path | None = None  # a local Hugging Face folder; None: the default base model
    metadata: Mapping[str, Any] = field(default_factory=dict)
    # Curators' hard negatives for the name encoders (BioSyn): (normalised text, concept id rejected for it).
    negative_pairs: Sequence[tuple[str, str]] = ()
    # For methods that read mentions in their context (LATTE): the annotated documents (gold mentions and
    # curators' accepted or relinked links as GoldMentions), their mention types to keep (None: all), the
    # concepts curators rejected per (document id, start, end) as hard negatives, each concept's known types,
    # the linker artifact to re-rank over (None: a zero-shot index is built), and optional dev documents
    # scored after every epoch.
    documents: Sequence[PubTatorDocument] = ()
    mention_types: frozenset[str] | None = None
    rejections: Mapping[tuple[str, int, int], frozenset[str]] = field(default_factory=dict)
    concept_types: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    base_artifact: Path | None = None
    dev_documents: Sequence[PubTatorDocument] = ()
    # For hierarchy pre-training (HiPrBERT): each dictionary's names and parent links, and corpus
    # mention->concept pairs as synonyms-only sources.
    hierarchies: Sequence[HierarchySource] = ()
    # For the word-vector encoders (fastText, BNE, DAN): free text to train word vectors on (documents,
    # names, definitions), and word vectors to start from instead (a folder saved by
    # :class:`linker.encoders.wordvec.WordVectors` or a user's .vec/.bin file; None: train fastText on
    # ``texts`` and the dictionary's names first).
    texts: Sequence[str] = ()
    word_vectors: Path | None = None
    # For the mention tagger's dictionary features: the dictionary's names as written (raw spellings tell an
    # acronym from a word); empty: the table's normalised names.
    names: Sequence[str] = ()


@dataclass(frozen=True)
class TrainingCallbacks:
    """Progress out, all optional. ``on_step``/``on_epoch_end`` get the trainer's progress dicts
    (:mod:`linker.train`); ``on_phase`` a phase name; ``on_log`` a line for a human; ``evaluate`` scores the
    built linker before the artifact is published (its figures become ``report["metrics"]``)."""

    on_step: ProgressCallback | None = None
    on_epoch_end: ProgressCallback | None = None
    on_phase: Callable[[str], None] | None = None
    on_log: Callable[[str], None] | None = None
    evaluate: Callable[[Linker], dict[str, float]] | None = None
    # The index build's progress (step, names done, names in all), as Linker.build reports it to the Models page.
    on_index: Callable[[str, int, int], None] | None = None

    def phase(self, name: str) -> None:
        if self.on_phase is not None:
            self.on_phase(name)

    def log(self, line: str) -> None:
        if self.on_log is not None:
            self.on_log(line)


@dataclass(frozen=True)
class RunContext:
    """What the caller decides when a run starts, besides the method's parameters."""

    device: str | None = None  # None: cuda if there is one, else cpu
    cache: str | None = None  # a folder for cached features (BioSyn's frozen-transformer scope)
    hierarchy: str | None = None  # the name of the hierarchy source among the inputs, for a method that reads one


def _as_config(params: Any, context: RunContext) -> Any:
    return params


@dataclass(frozen=True)
class Method(Generic[C]):
    """One row of the table: ``train(inputs, config, callbacks, folder)`` writes a complete artifact into
    ``folder`` (config.json and the rest; checkpoints under ``folder / "checkpoints"``) and returns the
    report; :func:`linker.recipe.train` publishes the folder.

    ``params`` is the dataclass of what a person sets (fields made by :func:`linker.methods.params.param`) and
    ``configure(params, context)`` makes the config from it; a method whose config class is its parameters
    leaves both out. ``label`` names it, ``summary`` says in a line what a run of it makes, ``title`` heads its
    settings (default: ``label`` up to a parenthesis). ``output`` is what the folder is (:data:`OUTPUTS`);
    ``base_model``: it starts from a transformer (``TrainingInputs.base_model``)."""

    name: str
    config_class: type[C]
    train: Callable[[TrainingInputs, C, TrainingCallbacks, Path], Report]
    description: str = ""
    label: str = ""
    summary: str = ""
    title: str = ""
    params: type | None = None
    configure: Callable[[Any, RunContext], C] = _as_config
    output: str = LINKER
    base_model: bool = False

    def __post_init__(self) -> None:
        if self.output not in OUTPUTS:
            raise ValueError(f"method {self.name}: output must be one of {', '.join(OUTPUTS)}, not {self.output!r}")

    @property
    def params_class(self) -> type:
        """The dataclass of its parameters (its config class where it declares none)."""
        return self.params or self.config_class

    @property
    def heading(self) -> str:
        return self.title or (self.label or self.name).split(" (")[0]


def prior_counts(
    docs: Iterable[PubTatorDocument],
    table: NameTable,
    mention_types: set[str] | None = None,
    curated: Iterable[str] = (),
) -> dict[str, int]:
    """The concept prior's evidence, one definition for every caller: how many training mentions are
    annotated with each (primary) concept. Every gold mention counts, repeats included (a composite mention
    counts once for each of its concepts), and each curated mention (a curator's accept or relink, given
    here by its concept id) counts once more. Ids outside ``table`` count nothing."""
    from linker.linker import annotation_counts

    counts = annotation_counts(docs, table, mention_types)
    for cid in curated:
        primary = table.resolve_id(cid)
        if primary:
            counts[primary] = counts.get(primary, 0) + 1
    return counts
