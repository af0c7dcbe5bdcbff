"""Word vectors for the fast name encoders (BNE, DAN): fastText trained on the project's own text with gensim,
or a user's ``.vec`` / ``.bin`` file.

fastText (Bojanowski et al. 2017) composes a vector for any word from its character n-grams, so a name's
rare or misspelt word ("lymphangioleiomyomatosis", "hypertrophic cardiomyopathyy") still gets a vector
near its neighbours'. A ``.vec`` file (word2vec text format) has no n-grams: its unseen words get a zero
vector, and :meth:`WordVectors.coverage` says how many that is.

Both papers train on biomedical text: BNE a skip-gram of dimension 200 with window 6 and 5 negatives on
PubMed, DAN 300-dimensional fastText on MEDLINE. :class:`FastTextConfig` defaults to BNE's settings; the
n-gram buckets are fewer than fastText's 2M because a workbench corpus is small and every bucket is a row
of floats saved with every encoder (100K x 200 x 4 bytes = 80 MB).

The tokenizer is shared by training and encoding (lower case, runs of letters and digits), so a name is
split exactly as the corpus was.
"""

from __future__ import annotations

import hashlib
import json
import re
import struct
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["FastTextConfig", "WordVectors", "WordVectorsError", "MeanWordVectorEncoder", "tokenize", "sentences"]

_TOKEN = re.compile(r"[a-z0-9]+")
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|\n+")
_FASTTEXT_MAGIC = 793712314  # the first int32 of a fastText .bin model
_STORE = "vectors.kv"
_META = "wordvectors.json"


class WordVectorsError(ValueError):
    """A word-vector file or corpus that cannot be used; the message names the file and what is wrong."""


def tokenize(text: str) -> list[str]:
    """Lower-cased runs of letters and digits: "Non-Hodgkin's lymphoma (NHL)" -> non hodgkin s lymphoma nhl."""
    return _TOKEN.findall(text.lower())


def sentences(texts: Iterable[str]) -> Iterator[list[str]]:
    """Token lists, one per sentence (a name or a title is one sentence); empty ones are skipped."""
    for text in texts:
        for piece in _SENTENCE_END.split(text):
            tokens = tokenize(piece)
            if tokens:
                yield tokens


@dataclass(frozen=True)
class FastTextConfig:
    """gensim FastText settings; the defaults are BNE's skip-gram (dimension 200, window 6, 5 negatives)."""

    dim: int = 200
    window: int = 6
    negative: int = 5
    min_count: int = 2  # a small corpus: words seen once still shape the n-grams, not the vocabulary
    epochs: int = 10
    min_n: int = 3
    max_n: int = 6
    bucket: int = 100_000
    skip_gram: bool = True
    seed: int = 13
    workers: int = 2

    def __post_init__(self) -> None:
        for name in ("dim", "window", "negative", "epochs", "workers"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"FastTextConfig.{name} must be at least 1")
        if not 1 <= self.min_n <= self.max_n:
            raise ValueError("FastTextConfig needs 1 <= min_n <= max_n")


class _Corpus:
    """A restartable iterable of token lists (gensim reads the corpus once per epoch plus once for the
    vocabulary)."""

    def __init__(self, texts: Sequence[str]) -> None:
        self.texts = texts

    def __iter__(self) -> Iterator[list[str]]:
        return sentences(self.texts)


class WordVectors:
    """Vectors for words and names: ``word_vectors(words)`` [n, d], ``name_vectors(names)`` [n, d] (the mean of
    a name's word vectors: q(s) of BNE, u_n of DAN). Vectors of words are cached, so encoding a dictionary
    costs one lookup per distinct word."""

    def __init__(self, keyed: Any, source: dict[str, Any] | None = None) -> None:
        self.keyed = keyed
        self.source: dict[str, Any] = dict(source or {})
        self._cache: dict[str, np.ndarray] = {}
        self._zero = np.zeros(self.dim, dtype=np.float32)

    @property
    def dim(self) -> int:
        return int(self.keyed.vector_size)

    @property
    def has_subwords(self) -> bool:
        """Whether unseen words get vectors from character n-grams (fastText) or zeros (a .vec file)."""
        return hasattr(self.keyed, "buckets_word") and int(getattr(self.keyed, "bucket", 0) or 0) > 0

    def __len__(self) -> int:
        return len(self.keyed.key_to_index)

    def __contains__(self, word: str) -> bool:
        return word in self.keyed.key_to_index

    def vector(self, word: str) -> np.ndarray:
        cached = self._cache.get(word)
        if cached is not None:
            return cached
        if word in self.keyed.key_to_index or self.has_subwords:
            vec = np.asarray(self.keyed.get_vector(word), dtype=np.float32)
        else:
            vec = self._zero
        self._cache[word] = vec
        return vec

    def word_vectors(self, words: Sequence[str]) -> np.ndarray:
        if not words:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self.vector(w) for w in words])

    def name_vectors(self, names: Sequence[str]) -> np.ndarray:
        """Mean word vector of each name [n, d] (zeros for a name without a letter or digit)."""
        out = np.zeros((len(names), self.dim), dtype=np.float32)
        for i, name in enumerate(names):
            tokens = tokenize(name)
            if tokens:
                out[i] = np.mean([self.vector(t) for t in tokens], axis=0)
        return out

    def coverage(self, texts: Iterable[str]) -> float:
        """Share of the texts' tokens that are in the vocabulary (1.0 for no tokens)."""
        seen = known = 0
        for text in texts:
            for token in tokenize(text):
                seen += 1
                known += token in self.keyed.key_to_index
        return known / seen if seen else 1.0

    def fingerprint(self) -> str:
        digest = hashlib.sha1()
        digest.update(np.ascontiguousarray(self.keyed.vectors[: min(len(self), 2000)]).tobytes())
        digest.update(str(len(self)).encode())
        return digest.hexdigest()[:16]

    def describe(self) -> dict[str, Any]:
        return {"dim": self.dim, "words": len(self), "subwords": self.has_subwords, **self.source}

    # --- making them -----------------------------------------------------------------------------------

    @classmethod
    def train(
        cls,
        texts: Sequence[str],
        config: FastTextConfig | None = None,
        on_epoch: Callable[[int, int], None] | None = None,
    ) -> WordVectors:
        """fastText on ``texts`` (documents, names, definitions: any strings). ``on_epoch(done, total)`` is
        called after each epoch. An empty corpus is refused."""
        from gensim.models import FastText
        from gensim.models.callbacks import CallbackAny2Vec

        config = settings = config or FastTextConfig()
        corpus = _Corpus(texts)
        counts = Counter(token for sentence in corpus for token in sentence)
        if not counts:
            raise WordVectorsError("no text to train word vectors on: the chosen documents and names hold no words")
        # A tiny corpus (a first collection, a test) whose words are nearly all seen once keeps them all
        # rather than failing on an empty vocabulary.
        frequent = sum(1 for c in counts.values() if c >= config.min_count)
        min_count = config.min_count if frequent >= 10 else 1

        class _Progress(CallbackAny2Vec):
            def __init__(self) -> None:
                self.epoch = 0

            def on_epoch_end(self, model: Any) -> None:
                self.epoch += 1
                if on_epoch is not None:
                    on_epoch(self.epoch, settings.epochs)

        model = FastText(
            vector_size=config.dim, window=config.window, negative=config.negative, min_count=min_count,
            sg=int(config.skip_gram), min_n=config.min_n, max_n=config.max_n, bucket=config.bucket,
            seed=config.seed, workers=config.workers,
        )
        model.build_vocab(corpus_iterable=corpus)
        model.train(corpus_iterable=corpus, total_examples=model.corpus_count, epochs=config.epochs,
                    callbacks=[_Progress()])
        source = {"source": "fasttext", "config": asdict(config), "sentences": model.corpus_count,
                  "tokens": sum(counts.values())}
        return cls(model.wv, source)

    @classmethod
    def from_file(cls, path: str | Path, expected_dim: int | None = None) -> WordVectors:
        """A user's file: fastText ``.bin`` (with n-grams), word2vec binary ``.bin``, or text ``.vec``/``.txt``.
        A missing, empty, malformed or truncated file, or one whose dimension is not ``expected_dim``,
        raises :class:`WordVectorsError` naming the file and the fault."""
        path = Path(path)
        if not path.is_file():
            raise WordVectorsError(f"{path}: no such file")
        if path.stat().st_size == 0:
            raise WordVectorsError(f"{path}: the file is empty")
        with path.open("rb") as fh:
            head = fh.read(4)
        try:
            if len(head) == 4 and struct.unpack("<i", head)[0] == _FASTTEXT_MAGIC:
                from gensim.models.fasttext import load_facebook_vectors

                keyed = load_facebook_vectors(str(path))
                fmt = "fasttext-bin"
            else:
                binary = path.suffix.lower() == ".bin"
                dim = _check_word2vec_header(path, binary)
                from gensim.models import KeyedVectors

                keyed = KeyedVectors.load_word2vec_format(str(path), binary=binary, unicode_errors="replace")
                if keyed.vector_size != dim:
                    raise WordVectorsError(f"{path}: the header says {dim} dimensions, the vectors have "
                                           f"{keyed.vector_size}")
                fmt = "word2vec-bin" if binary else "vec"
        except WordVectorsError:
            raise
        except (ValueError, EOFError, struct.error, UnicodeDecodeError, NotImplementedError, AssertionError,
                IndexError, OSError) as exc:
            raise WordVectorsError(f"{path}: not a readable word-vector file ({type(exc).__name__}: {exc}); "
                                   "expected fastText .bin or word2vec .vec/.bin") from exc
        if len(keyed.key_to_index) == 0:
            raise WordVectorsError(f"{path}: the file holds no word vectors")
        if not np.isfinite(np.asarray(keyed.vectors)).all():
            raise WordVectorsError(f"{path}: some vectors hold NaN or infinite values")
        if expected_dim is not None and keyed.vector_size != expected_dim:
            raise WordVectorsError(f"{path}: vectors of dimension {keyed.vector_size}, but {expected_dim} are needed")
        return cls(keyed, {"source": "file", "file": path.name, "format": fmt})

    # --- persistence -----------------------------------------------------------------------------------

    def save(self, folder: str | Path) -> None:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        self.keyed.save(str(folder / _STORE))
        (folder / _META).write_text(json.dumps(self.describe(), indent=2, default=str) + "\n")

    @classmethod
    def load(cls, folder: str | Path) -> WordVectors:
        from gensim.models import KeyedVectors

        folder = Path(folder)
        store = folder / _STORE
        if not store.exists():
            raise WordVectorsError(f"{folder}: not a word-vector folder (no {_STORE})")
        keyed = KeyedVectors.load(str(store))
        meta = json.loads((folder / _META).read_text()) if (folder / _META).exists() else {}
        source = {k: v for k, v in meta.items() if k not in ("dim", "words", "subwords")}
        return cls(keyed, source)

    @staticmethod
    def is_folder(folder: str | Path) -> bool:
        return (Path(folder) / _STORE).exists()


def _check_word2vec_header(path: Path, binary: bool) -> int:
    """The ``<count> <dim>`` first line of a word2vec file, checked, and for a text file every row's width."""
    with path.open("rb") as fh:
        first = fh.readline()
        parts = first.split()
        if len(parts) != 2 or not all(p.isdigit() for p in parts):
            raise WordVectorsError(f"{path}: the first line must be '<words> <dimension>', found "
                                   f"{first[:60].decode('utf-8', 'replace')!r}")
        count, dim = int(parts[0]), int(parts[1])
        if count == 0 or dim == 0:
            raise WordVectorsError(f"{path}: the header announces {count} words of dimension {dim}")
        if binary:
            # gensim allocates count x dim floats before reading a row: a header that promises more than
            # the file can hold (a truncated or hostile file) is refused before that allocation.
            needed = count * dim * 4
            available = path.stat().st_size - len(first)
            if needed > available:
                raise WordVectorsError(f"{path}: truncated or not word2vec: the header announces {count} vectors of "
                                       f"dimension {dim} ({needed:,} bytes), the file holds {available:,}")
            return dim
        rows = 0
        for number, line in enumerate(fh, start=2):
            if not line.strip():
                continue
            width = len(line.rstrip().split(b" ")) - 1
            if width != dim:
                raise WordVectorsError(f"{path}: line {number} has {width} values where the header says {dim}")
            rows += 1
        if rows < count:
            raise WordVectorsError(f"{path}: truncated: the header announces {count} words, the file holds {rows}")
    return dim


class MeanWordVectorEncoder:
    """A name as the mean of its word vectors, L2-normalised: BNE's SG_W baseline and DAN's input u_n, as a
    name encoder (the baselines the BNE/DAN runs and the benchmarks score beside the trained encoders)."""

    kind = "word-vectors"

    def __init__(self, vectors: WordVectors) -> None:
        self.vectors = vectors

    @property
    def dim(self) -> int:
        return self.vectors.dim

    def encode(self, texts: Sequence[str], batch_size: int = 4096) -> np.ndarray:
        x = self.vectors.name_vectors(list(texts))
        return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)

    def fingerprint(self) -> str:
        return self.vectors.fingerprint()

    def save(self, folder: str | Path) -> None:
        self.vectors.save(folder)
