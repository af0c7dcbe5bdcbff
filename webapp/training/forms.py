"""The start-a-run form: dictionary, gold collections, the method, and its main knobs with their defaults
(BioSyn: the paper's hyperparameters; LATTE: epochs, latent types K and top-k, the rest the linker's defaults;
HiPrBERT: more dictionaries, the batches, the distances and the held-out share; fastText: the documents and
whether the dictionary's names and definitions join, dimension and epochs; BNE and DAN: the word vectors to
start from, epochs, patience and time budget, BNE's objectives, DAN's level and hierarchy; the mention tagger: the
mention types, epochs, learning rate, batch size, max length, training documents). BioSyn, HiPrBERT and the tagger
start from a base encoder: the default base model, a HiPrBERT one, or a folder typed in. The models page's forms
are here too: word-vector uploads, and index builds (any encoder, with an optional BNE/DAN first stage)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.db.models import Exists, OuterRef
from django.urls import reverse

from linker.train import SCOPE_DEFAULTS
from webapp.corpus.models import Collection
from webapp.training.base_encoders import base_encoders, default_base_label, describe
from webapp.training.errors import RunError
from webapp.training.held_out import check_held_out, run_training_data
from webapp.training.hierarchy_inputs import check_has_hierarchy
from webapp.training.hiprbert import MAX_HOLDOUT, scope_defaults
from webapp.training.index_builds import (
    IndexBuildError,
    check_index_build,
    dictionaries_of,
    fast_encoders,
    indexable_encoders,
    suggested_first_stage,
)
from webapp.training.index_builds import describe as describe_encoder
from webapp.training.models import EncoderModel, WordVectorModel
from webapp.training.params import BIOSYN, HIPRBERT, LATTE, default_params
from webapp.training.tagger_params import TAGGER
from webapp.training.word_vector_params import BNE, DAN, FASTTEXT, MAX_DIM
from webapp.training.word_vectors import describe as describe_word_vectors
from webapp.training.word_vectors import word_vector_models
from webapp.vocab.models import Dictionary, HierarchyEdge

DEFAULTS = default_params(BIOSYN)
LATTE_DEFAULTS = default_params(LATTE)
HIPRBERT_DEFAULTS = default_params(HIPRBERT)
FASTTEXT_DEFAULTS, BNE_DEFAULTS, DAN_DEFAULTS = default_params(FASTTEXT), default_params(BNE), default_params(DAN)
STUDENT, FULL = scope_defaults("student"), scope_defaults("full")
ENCODERS = f"{BNE} {DAN}"
WORD_VECTOR_METHODS = f"{FASTTEXT} {BNE} {DAN}"


class HierarchyDictionariesField(forms.ModelMultipleChoiceField):
    def label_from_instance(self, obj: Dictionary) -> str:
        return str(obj) if getattr(obj, "has_edges", True) else f"{obj} (no hierarchy)"


class BaseEncoderField(forms.ModelChoiceField):
    def label_from_instance(self, obj: EncoderModel) -> str:
        return describe(obj)


class WordVectorsField(forms.ModelChoiceField):
    def label_from_instance(self, obj: WordVectorModel) -> str:
        return describe_word_vectors(obj)


def _hierarchy_dictionaries() -> Any:
    # Any release's edges: a hint for the label; the latest release is what is checked (clean).
    return (Dictionary.objects.annotate(has_edges=Exists(HierarchyEdge.objects.filter(version__dictionary=OuterRef("pk"))))
            .order_by("slug"))


class HierarchyDictionaryField(forms.ModelChoiceField):
    def label_from_instance(self, obj: Dictionary) -> str:
        return str(obj) if getattr(obj, "has_edges", True) else f"{obj} (no hierarchy)"


def _scoped_placeholder(name: str) -> str:
    """What an empty scope-dependent field trains with: "10 on a GPU, 1 on a CPU"."""
    gpu, cpu = getattr(SCOPE_DEFAULTS["full"], name), getattr(SCOPE_DEFAULTS["student"], name)
    return f"{gpu:g} on a GPU, {cpu:g} on a CPU".replace("e-0", "e-")


class StartRunForm(forms.Form):
    method = forms.ChoiceField(
        choices=[(BIOSYN, "BioSyn: train the encoder on synonyms and mentions"),
                 (LATTE, "LATTE: a re-ranker over the active model (context, latent and known types)"),
                 (HIPRBERT, "Hierarchy pre-training (HiPrBERT): a base encoder from the dictionaries' hierarchies"),
                 (FASTTEXT, "Word vectors (fastText): for BNE and DAN runs to start from"),
                 (BNE, "BNE: a fast name encoder over word vectors (BiLSTM over characters and words)"),
                 (DAN, "DAN: a fast name encoder over word vectors (averaging network; synonym sets or a hierarchy level)"),
                 (TAGGER, "Mention tagger: a mention detector (BIO token classification) from the gold spans and "
                          "curators' span edits")],
        initial=BIOSYN, widget=forms.RadioSelect, required=False,
        help_text="What the run trains; only that method's settings are shown below.",
    )
    dictionary = forms.ModelChoiceField(
        queryset=Dictionary.objects.order_by("slug"), to_field_name="slug", empty_label="Choose a dictionary",
        help_text="The concepts to link to: the run trains on its latest release.",
    )
    collections = forms.ModelMultipleChoiceField(
        queryset=Collection.objects.filter(has_gold=True).order_by("slug"), to_field_name="slug",
        label="Training collections",
        help_text="Gold mentions to train on (Ctrl- or Cmd-click for several); curator decisions made so far are "
                  "added. HiPrBERT: optional, their gold mentions become extra names of the concepts they link to.",
    )
    eval_collection = forms.ModelChoiceField(
        queryset=Collection.objects.filter(has_gold=True).order_by("slug"), to_field_name="slug", required=False,
        label="Evaluate on", empty_label="none: evaluate the index later",
        help_text="A gold collection held out of training: Acc@1, Acc@5 and MRR of the trained model. A training "
                  "collection, or one sharing documents with them, is refused: its score would be memory.",
    )
    base_encoder = BaseEncoderField(
        queryset=base_encoders(), to_field_name="name", required=False,
        help_text="A HiPrBERT base encoder (hierarchy pre-training) to start from, or the default base model.",
    )
    base_model = forms.CharField(required=False, max_length=500, label="Or a base model folder",
                                 help_text="Local Hugging Face folder on the workers' machine, instead of a base encoder.")
    # Epochs and learning rate depend on the scope: empty keeps the scope's default (0 in the run's params).
    epochs = forms.IntegerField(
        min_value=0, max_value=1000, widget=forms.NumberInput(attrs={"placeholder": _scoped_placeholder("epochs")}),
        help_text="Passes over the training pairs. Empty: the scope's default, the paper's 10 when a GPU fine-tunes "
                  "the whole model, 1 for the CPU's 3-layer student.",
    )
    topk = forms.IntegerField(min_value=1, max_value=200, initial=DEFAULTS["topk"], label="Top-k candidates",
                              help_text="Candidates retrieved per mention each epoch, the gold ones among them "
                                        "marginalised (the paper's 20).")
    dense_ratio = forms.FloatField(min_value=0.0, max_value=1.0, initial=DEFAULTS["dense_ratio"], label="Dense share α",
                                   help_text="Share of the top-k taken from dense retrieval, the rest from tf-idf "
                                             "(the paper's 0.5).")
    lr = forms.FloatField(
        min_value=0.0, label="Learning rate", widget=forms.NumberInput(attrs={"placeholder": _scoped_placeholder("lr"),
                                                                             "step": "any"}),
        help_text="Of the transformer. Empty: the scope's default, the paper's 1e-5 on a GPU, 2e-5 for the student.",
    )
    batch_size = forms.IntegerField(min_value=1, max_value=4096, initial=DEFAULTS["batch_size"],
                                    help_text="Training mentions per step (the paper's 16).")
    max_length = forms.IntegerField(min_value=4, max_value=512, initial=DEFAULTS["max_length"], label="Max length (tokens)",
                                    help_text="Longer names and mentions are cut (the paper's 25).")
    train_scope = forms.ChoiceField(
        choices=[("auto", "auto (full on a GPU, student on a CPU)"), ("full", "full (the paper)"),
                 ("student", "student (the paper on 3 layers: CPU)"), ("head", "head (frozen transformer)")],
        initial=DEFAULTS["train_scope"], label="Training scope",
        help_text="How much of the transformer trains: all of it (a GPU job), a 3-layer student (about 11 minutes for "
                  "NCBI Disease on two CPU cores), or a head on the frozen model (seconds, but it overfits).",
    )
    skip_pretrain = forms.BooleanField(required=False, label="Skip synonym pre-training",
                                       help_text="BioSyn first pre-trains on the dictionary's synonym sets "
                                                 "(SapBERT-style); a base encoder has done that already.")
    max_queries = forms.IntegerField(min_value=0, label="Training queries", widget=forms.NumberInput(attrs={"placeholder": "all"}),
                                     help_text="Train on the first N queries only, for a quick trial; empty: all.")

    latte_epochs = forms.IntegerField(min_value=1, max_value=1000, initial=LATTE_DEFAULTS["epochs"], label="LATTE epochs",
                                      help_text="Passes over the cross-fitted training candidates.")
    latent_types = forms.IntegerField(min_value=1, max_value=65536, initial=LATTE_DEFAULTS["latent_types"],
                                      label="Latent types K", help_text="The paper's 2048; most stay empty on a small dictionary.")
    latte_top_k = forms.IntegerField(min_value=2, max_value=200, initial=LATTE_DEFAULTS["top_k"], label="LATTE top-k",
                                     help_text="Retriever candidates the re-ranker orders (the paper's 10).")

    extra_dictionaries = HierarchyDictionariesField(
        queryset=_hierarchy_dictionaries(), to_field_name="slug", required=False, label="More dictionaries",
        help_text="Also pre-train on these dictionaries' hierarchies (names of two dictionaries are never compared).",
    )
    hiprbert_scope = forms.ChoiceField(
        choices=[("auto", "auto (full on a GPU, student on a CPU)"), ("full", "full (the paper: the whole model)"),
                 ("student", "student (3 layers: CPU)")], initial=HIPRBERT_DEFAULTS["train_scope"], label="Scope",
        help_text="The whole transformer (a GPU job) or the 3-layer student that the CPU BioSyn default trains.",
    )
    hiprbert_epochs = forms.IntegerField(min_value=1, max_value=100, initial=HIPRBERT_DEFAULTS["epochs"], label="Epochs",
                                         help_text="Passes over the anchor concepts (the batches below each).")
    max_batches = forms.IntegerField(
        min_value=0, max_value=10_000_000, label="Max batches per epoch",
        widget=forms.NumberInput(attrs={"placeholder": f"{STUDENT['max_batches']} on a CPU, "
                                                       f"{FULL['max_batches'] or 'all'} on a GPU"}),
        help_text=f"Empty: the scope's ({STUDENT['max_batches']} for the student, 12-16 minutes on two quiet CPU cores; "
                  f"{FULL['max_batches'] or 'all'} for full). 0: every name once.",
    )
    hiprbert_batch_size = forms.IntegerField(
        min_value=2, max_value=4096, label="Batch size (names)",
        widget=forms.NumberInput(attrs={"placeholder": f"{STUDENT['batch_size']} on a CPU, {FULL['batch_size']} on a GPU"}),
        help_text=f"Empty: the scope's ({STUDENT['batch_size']} for the student, {FULL['batch_size']} for full, the paper's).",
    )
    hiprbert_lr = forms.FloatField(
        min_value=0.0, max_value=1.0, label="Learning rate",
        widget=forms.NumberInput(attrs={"placeholder": f"{FULL['lr']:g} on a GPU, {STUDENT['lr']:g} on a CPU", "step": "any"}),
        help_text=f"Of the transformer. Empty: the scope's ({FULL['lr']:g} for full, the paper's; {STUDENT['lr']:g} for the "
                  "student's fewer steps).",
    )
    distances = forms.ChoiceField(
        choices=[("hierarchy", "hierarchy: synonym, sibling, parent-child, other (the paper)"),
                 ("synonym", "synonym only (the SapBERT-style baseline)")],
        initial=HIPRBERT_DEFAULTS["distances"],
        help_text="Which pairs the loss orders: the hierarchy's four distances, or synonyms against the rest.",
    )
    holdout_share = forms.FloatField(
        min_value=0.0, max_value=MAX_HOLDOUT, initial=HIPRBERT_DEFAULTS["holdout_share"], label="Held-out share",
        help_text="Concepts left out of training and scored on (ROC AUC, Spearman per distance); 0: none.",
    )
    device = forms.ChoiceField(choices=[("", "auto: the worker's GPU if it has one, else its CPU"), ("cpu", "cpu"),
                                        ("cuda", "cuda (fails on a worker without a GPU)")],
                               initial="", help_text="The scope's defaults follow the device.")

    # fastText, and BNE/DAN runs that train their own word vectors first.
    word_vectors = WordVectorsField(
        queryset=word_vector_models(), to_field_name="name", required=False, label="Start from word vectors",
        help_text="Word vectors of the workbench (a fastText run's, or an uploaded file on the models page); "
                  "empty: fastText is trained on the gold collections' documents first.",
    )
    text_collections = forms.ModelMultipleChoiceField(
        queryset=Collection.objects.order_by("slug"), to_field_name="slug", required=False, label="Documents to train on",
        help_text="The titles and abstracts of these collections' documents (gold or not).",
    )
    include_names = forms.BooleanField(required=False, initial=True, label="The dictionary's names join the texts",
                                       help_text="Most words a name encoder meets are in the names.")
    include_definitions = forms.BooleanField(required=False, initial=True, label="The dictionary's definitions join the texts",
                                             help_text="Concept definitions: more text around the names' words.")
    vector_dim = forms.IntegerField(min_value=1, max_value=MAX_DIM, initial=FASTTEXT_DEFAULTS["dim"], label="Dimension",
                                    help_text="Of the word vectors (BNE's paper: 200; DAN's: 300).")
    vector_epochs = forms.IntegerField(min_value=1, max_value=1000, initial=FASTTEXT_DEFAULTS["epochs"], label="fastText epochs",
                                       help_text="Passes of fastText over the texts.")

    # BNE and DAN: the training loop around the encoder (each with its paper's defaults).
    bne_epochs = forms.IntegerField(min_value=1, max_value=1000, initial=BNE_DEFAULTS["epochs"], label="Max epochs",
                                    help_text="Early stopping usually ends it sooner.")
    bne_patience = forms.IntegerField(min_value=1, max_value=1000, initial=BNE_DEFAULTS["patience"], label="Patience",
                                      help_text="Stop after this many epochs without a better dev Acc@1.")
    bne_max_minutes = forms.FloatField(min_value=0.0, max_value=10_000.0, label="Time budget (minutes)",
                                       widget=forms.NumberInput(attrs={"placeholder": "none", "step": "any"}),
                                       help_text="Empty or 0: none; else the epoch under way is cut short and scored.")
    objectives = forms.MultipleChoiceField(
        choices=[("syn", "synonyms: f(s) near f(s') of another name of its concept"),
                 ("def", "concept: f(s) near the mean word vectors of its concept's names"),
                 ("ctx", "context: f(s) near its own mean word vector")],
        initial=BNE_DEFAULTS["objectives"], widget=forms.CheckboxSelectMultiple, required=False,
        help_text="The paper trains all three; fewer for an ablation.",
    )
    dan_epochs = forms.IntegerField(min_value=1, max_value=1000, initial=DAN_DEFAULTS["max_epochs"], label="Max epochs",
                                    help_text="Early stopping usually ends it sooner.")
    dan_patience = forms.IntegerField(min_value=1, max_value=1000, initial=DAN_DEFAULTS["patience"], label="Patience",
                                      help_text="Stop after this many epochs without a better dev score (the paper: 10).")
    dan_max_minutes = forms.FloatField(min_value=0.0, max_value=10_000.0, initial=DAN_DEFAULTS["max_minutes"],
                                       label="Time budget (minutes)", help_text="0: none.")
    level = forms.IntegerField(min_value=0, max_value=20, initial=DAN_DEFAULTS["level"], label="Level",
                               help_text="0: synonym sets (concepts: the linking setting). L ≥ 1: the classes are the "
                                         "ancestors at level L of the hierarchy.")
    hierarchy = HierarchyDictionaryField(
        queryset=_hierarchy_dictionaries(), to_field_name="slug", required=False, label="Hierarchy of",
        help_text="For a level ≥ 1; empty: the run's dictionary.",
    )

    # The mention tagger (its defaults are the linker's TaggerRecipeConfig's, set when the form is made).
    tagger_mention_types = forms.CharField(
        required=False, max_length=500, label="Mention types", widget=forms.TextInput(attrs={"placeholder": "all types"}),
        help_text="The types it learns to find, comma-separated (e.g. Disease); empty: every type of the training "
                  "documents. Mentions curators added without a type always count.",
    )
    tagger_epochs = forms.IntegerField(min_value=1, max_value=1000, label="Epochs",
                                       help_text="Passes over the training documents; the evaluation collection is "
                                                 "scored after each.")
    tagger_lr = forms.FloatField(min_value=0.0, label="Learning rate", widget=forms.NumberInput(attrs={"step": "any"}),
                                 help_text="Of the transformer and its token-classification head.")
    tagger_batch_size = forms.IntegerField(min_value=1, max_value=4096, label="Batch size (windows)",
                                           help_text="Token windows per step.")
    tagger_max_length = forms.IntegerField(min_value=16, max_value=512, label="Max length (tokens)",
                                           help_text="Each window's length: longer documents are read in overlapping windows.")
    tagger_stride = forms.IntegerField(min_value=0, max_value=509, label="Stride (tokens)",
                                       help_text="Tokens consecutive windows share; below the max length less 2.")
    tagger_max_documents = forms.IntegerField(min_value=0, label="Training documents",
                                              widget=forms.NumberInput(attrs={"placeholder": "all"}),
                                              help_text="Train on the first N documents only, for a quick trial; empty: all.")

    PARAMS = ("epochs", "topk", "dense_ratio", "lr", "batch_size", "max_length", "train_scope", "skip_pretrain", "max_queries")
    # LATTE's form fields -> its params; the rest keep LATTE's defaults.
    LATTE_PARAMS = {"latte_epochs": "epochs", "latent_types": "latent_types", "latte_top_k": "top_k"}
    LATTE_FIELDS = tuple(LATTE_PARAMS)
    # HiPrBERT's form fields -> its params (empty ones keep the scope's defaults).
    HIPRBERT_PARAMS = {"hiprbert_scope": "train_scope", "hiprbert_epochs": "epochs", "max_batches": "max_batches",
                       "hiprbert_batch_size": "batch_size", "hiprbert_lr": "lr", "distances": "distances", "holdout_share": "holdout_share",
                       "device": "device"}
    HIPRBERT_FIELDS = ("extra_dictionaries", *HIPRBERT_PARAMS)
    BASE_FIELDS = ("base_encoder", "base_model")
    # The word-vector methods' fields -> their params (per method: fastText's and BNE/DAN's own fastText).
    VECTOR_FIELDS = ("word_vectors", "text_collections", "include_names", "include_definitions", "vector_dim", "vector_epochs")
    FASTTEXT_PARAMS = {"include_names": "include_names", "include_definitions": "include_definitions",
                       "vector_dim": "dim", "vector_epochs": "epochs"}
    OWN_VECTOR_FIELDS = ("include_definitions", "vector_dim", "vector_epochs")
    OWN_VECTOR_PARAMS = {"include_definitions": "include_definitions", "vector_dim": "fasttext_dim",
                         "vector_epochs": "fasttext_epochs"}
    BNE_FIELDS = ("bne_epochs", "bne_patience", "bne_max_minutes", "objectives")
    # The tagger's form fields -> its params.
    TAGGER_PARAMS = {"tagger_mention_types": "mention_types", "tagger_epochs": "epochs", "tagger_lr": "lr",
                     "tagger_batch_size": "batch_size", "tagger_max_length": "max_length", "tagger_stride": "stride",
                     "tagger_max_documents": "max_documents"}
    TAGGER_FIELDS = tuple(TAGGER_PARAMS)
    DAN_FIELDS = ("level", "hierarchy", "dan_epochs", "dan_patience", "dan_max_minutes")
    # Form field -> the recipe's name, per method (BNE's and DAN's epochs are called differently).
    ENCODER_PARAMS = {BNE: {"bne_epochs": "epochs", "bne_patience": "patience", "bne_max_minutes": "max_minutes",
                            "objectives": "objectives"},
                      DAN: {"dan_epochs": "max_epochs", "dan_patience": "patience", "dan_max_minutes": "max_minutes",
                            "level": "level"}}
    # Fields that only some methods read (the page hides them for the others).
    field_methods = {"eval_collection": f"{BIOSYN} {LATTE} {ENCODERS} {TAGGER}",
                     "collections": f"{BIOSYN} {LATTE} {HIPRBERT} {ENCODERS} {TAGGER}",
                     "word_vectors": ENCODERS, "text_collections": FASTTEXT, "include_names": FASTTEXT}
    student_defaults = STUDENT

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Only the chosen method's fields matter; an empty one keeps its default. Collections are required
        # by BioSyn and LATTE only (clean).
        for name in (*self.PARAMS, *self.LATTE_FIELDS, *self.HIPRBERT_FIELDS, *self.VECTOR_FIELDS, *self.BNE_FIELDS,
                     *self.DAN_FIELDS, *self.TAGGER_FIELDS, "collections"):
            self.fields[name].required = False
        tagger = default_params(TAGGER)
        for name, param in self.TAGGER_PARAMS.items():
            value = tagger.get(param)
            self.fields[name].initial = ", ".join(value) if isinstance(value, list) else value
        base: forms.ModelChoiceField = self.fields["base_encoder"]  # type: ignore[assignment]
        base.empty_label = default_base_label()
        vectors: forms.ModelChoiceField = self.fields["word_vectors"]  # type: ignore[assignment]
        vectors.empty_label = "none: train fastText on the run's texts first"
        hierarchy: forms.ModelChoiceField = self.fields["hierarchy"]  # type: ignore[assignment]
        hierarchy.empty_label = "the run's dictionary"
        if not self.is_bound:  # a query string may preselect, but an unchecked box in a POST means no
            for name in ("include_names", "include_definitions"):
                self.initial.setdefault(name, True)
            self._preselect_single_choices()

    def _preselect_single_choices(self) -> None:
        """Where there is one dictionary, or one gold collection, there is nothing to choose: it is chosen."""
        dictionary: forms.ModelChoiceField = self.fields["dictionary"]  # type: ignore[assignment]
        dictionaries = list(dictionary.queryset[:2])  # type: ignore[index]
        if len(dictionaries) == 1:
            dictionary.empty_label = None
            self.initial.setdefault("dictionary", dictionaries[0].slug)
        gold = list(self.fields["collections"].queryset[:2])  # type: ignore[attr-defined]
        if len(gold) == 1:
            self.initial.setdefault("collections", [gold[0].slug])

    def groups(self) -> list[tuple[str, str, list[forms.BoundField]]]:
        """The fields as the page shows them: (legend, the methods they serve, fields): what every run needs,
        the base encoder (BioSyn and HiPrBERT), then each method's knobs."""
        own = {"method", *self.PARAMS, *self.LATTE_FIELDS, *self.HIPRBERT_FIELDS, *self.BASE_FIELDS,
               *self.VECTOR_FIELDS, *self.BNE_FIELDS, *self.DAN_FIELDS, *self.TAGGER_FIELDS}
        return [
            ("", "", [self["method"]] + [f for f in self if f.name not in own]),
            ("Base encoder", f"{BIOSYN} {HIPRBERT} {TAGGER}", [self[name] for name in self.BASE_FIELDS]),
            ("BioSyn", BIOSYN, [self[name] for name in self.PARAMS]),
            ("LATTE", LATTE, [self[name] for name in self.LATTE_FIELDS]),
            ("HiPrBERT", HIPRBERT, [self[name] for name in self.HIPRBERT_FIELDS]),
            ("Word vectors", WORD_VECTOR_METHODS, [self[name] for name in self.VECTOR_FIELDS]),
            ("BNE", BNE, [self[name] for name in self.BNE_FIELDS]),
            ("DAN", DAN, [self[name] for name in self.DAN_FIELDS]),
            ("Mention tagger", TAGGER, [self[name] for name in self.TAGGER_FIELDS]),
        ]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        method = data.get("method") or BIOSYN
        dictionary, evaluation = data.get("dictionary"), data.get("eval_collection")
        extra = [d for d in data.get("extra_dictionaries") or [] if d != dictionary]
        if method == HIPRBERT:
            self._check_hierarchies(dictionary, extra)
            if evaluation is not None:
                self.add_error("eval_collection", "Hierarchy pre-training is scored on held-out concepts (held-out "
                                                  "share), not on a gold collection.")
            if data.get("hiprbert_lr") is not None and not data["hiprbert_lr"] > 0:
                self.add_error("hiprbert_lr", "The learning rate must be above 0 (empty: the scope's default).")
        elif method == FASTTEXT:
            if not (data.get("text_collections") or data.get("include_names") or data.get("include_definitions")):
                self.add_error("text_collections", "Choose documents to train on, or let the dictionary's names or "
                                                   "definitions join the texts.")
            data["eval_collection"] = evaluation = None  # hidden for fastText: whatever the page still posted
            extra = []
        else:
            if not data.get("collections") and "collections" not in self.errors:
                self.add_error("collections", self.fields["collections"].error_messages["required"])
            if extra:
                self.add_error("extra_dictionaries", "Only hierarchy pre-training trains on several dictionaries.")
        if method == BNE and not data.get("objectives"):
            self.add_error("objectives", "Tick at least one objective (the paper trains all three).")
        if method == DAN and (data.get("level") or 0) >= 1:
            chosen = data.get("hierarchy") or dictionary
            if chosen is not None:
                try:
                    check_has_hierarchy(chosen)
                except RunError as exc:
                    self.add_error("hierarchy", f"{exc}: DAN at level {data['level']} learns the ancestors at that "
                                                "level; choose a dictionary with a hierarchy, or level 0.")
        if method == TAGGER:
            length = data.get("tagger_max_length") or self.fields["tagger_max_length"].initial
            stride = data.get("tagger_stride")
            stride = self.fields["tagger_stride"].initial if stride is None else stride
            if length and stride is not None and stride >= length - 2:
                self.add_error("tagger_stride", f"Windows of {length} tokens share fewer than {length - 2}: lower the "
                                                "stride (a quarter of the max length reads well).")
        if method == LATTE and data.get("base_encoder"):
            self.add_error("base_encoder", "LATTE re-ranks over the active index: it takes no base encoder.")
        if method in (FASTTEXT, BNE, DAN):  # the base encoder fields are hidden for them: what was left there
            data["base_encoder"], data["base_model"] = None, ""
        if data.get("base_encoder") and data.get("base_model"):
            self.add_error("base_model", "Choose a base encoder or type a folder, not both.")
        allowed = {d.pk for d in (dictionary, *extra) if d is not None}
        own_collections = [] if method == FASTTEXT else list(data.get("collections") or [])
        for collection in own_collections + ([evaluation] if evaluation else []):
            if dictionary is not None and collection.dictionary_id not in (None, *allowed):
                self.add_error(None, f"{collection} links to another dictionary ({collection.dictionary}).")
        if evaluation is not None and "eval_collection" not in self.errors:
            base = data.get("base_encoder")
            try:  # the service's own check (start_run repeats it, with a LATTE run's base index too)
                check_held_out(evaluation, run_training_data(own_collections, base.artifact_path if base else
                                                              data.get("base_model") or ""))
            except RunError as exc:
                self.add_error("eval_collection", str(exc))
        data["extra_dictionaries"] = extra
        return data

    def _check_hierarchies(self, dictionary: Dictionary | None, extra: list[Dictionary]) -> None:
        """A field error naming each chosen dictionary that has no hierarchy to pre-train on."""
        for field, chosen in (("dictionary", [dictionary] if dictionary else []), ("extra_dictionaries", extra)):
            for d in chosen:
                try:
                    check_has_hierarchy(d)
                except RunError as exc:
                    self.add_error(field, str(exc))

    def params(self) -> dict[str, Any]:
        """The chosen method's params (with ``method``) from the fields of that method."""
        data = self.cleaned_data
        method = data.get("method") or BIOSYN
        if method == LATTE:
            chosen = {param: data.get(field) for field, param in self.LATTE_PARAMS.items()}
        elif method == HIPRBERT:
            chosen = {param: data.get(field) for field, param in self.HIPRBERT_PARAMS.items()}
        elif method == FASTTEXT:
            chosen = {param: data.get(field) for field, param in self.FASTTEXT_PARAMS.items()}
        elif method == TAGGER:
            chosen = {param: data.get(field) for field, param in self.TAGGER_PARAMS.items()}
            chosen["mention_types"] = [t.strip() for t in (data.get("tagger_mention_types") or "").split(",") if t.strip()]
        elif method in (BNE, DAN):
            fields = self.OWN_VECTOR_PARAMS | self.ENCODER_PARAMS[method]
            chosen = {param: data.get(field) for field, param in fields.items()}
            if method == DAN and data.get("hierarchy") is not None:
                chosen["hierarchy"] = data["hierarchy"].pk
        else:
            chosen = {name: data.get(name) for name in self.PARAMS}
        return {"method": method} | {k: v for k, v in chosen.items() if v not in (None, "")}

    def run_collections(self) -> list[Collection]:
        """What the run trains on: fastText the documents of any collections, the others gold collections."""
        data = self.cleaned_data
        key = "text_collections" if (data.get("method") or BIOSYN) == FASTTEXT else "collections"
        return list(data.get(key) or [])

    def run_word_vectors(self) -> WordVectorModel | None:
        data = self.cleaned_data
        return data.get("word_vectors") if data.get("method") in (BNE, DAN) else None


class WordVectorUploadForm(forms.Form):
    """An admin's word-vector file: read by :func:`webapp.training.word_vectors.upload_word_vectors`."""

    # An empty file is the service's to refuse: its message names the file.
    file = forms.FileField(label="Word-vector file", allow_empty_file=True, help_text="fastText .bin, word2vec .bin, or text .vec/.txt "
                                                               "(first line: '<words> <dimension>').")
    name = forms.SlugField(max_length=120, required=False, help_text="Empty: from the file's name.")
    dim = forms.IntegerField(min_value=1, max_value=MAX_DIM, required=False, label="Expected dimension",
                             help_text="Refuse the file unless its vectors have this dimension; empty: any.")
    dictionary = forms.ModelChoiceField(
        queryset=Dictionary.objects.order_by("slug"), to_field_name="slug", required=False,
        label="Coverage of the names of", help_text="Measures the share of this dictionary's name words the file knows.",
        empty_label="no dictionary (coverage not measured)",
    )


class EncoderChoiceField(forms.ModelChoiceField):
    """An encoder labelled with its kind and the dictionary it was trained on (``trained_on``, filled by the form)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.trained_on: dict[int, Dictionary] = {}

    def label_from_instance(self, obj: EncoderModel) -> str:
        return describe_encoder(obj, self.trained_on.get(obj.pk))


FIRST_STAGE_HELP = ("the transformer then encodes only mentions that are not a dictionary name; top candidates "
                    "unchanged")


class IndexBuildForm(forms.Form):
    """The models page's "Build an index": a dictionary's latest release with any encoder (none: tf-idf only) and,
    in front of a transformer, an optional BNE/DAN first stage. :meth:`for_choice` makes the unbound form with the
    newest fitting choices preselected (re-rendered by htmx when the dictionary or the encoder changes)."""

    dictionary = forms.ModelChoiceField(queryset=Dictionary.objects.order_by("slug"), to_field_name="slug",
                                        label="Dictionary", help_text="Its latest release is indexed.")
    encoder = EncoderChoiceField(
        queryset=indexable_encoders(), to_field_name="name", required=False, label="Encoder",
        empty_label="none: tf-idf only",
        help_text="A transformer ranks best; BNE and DAN encode names far faster on a CPU.",
    )
    # Every encoder is accepted here so that a wrong one is refused by name (clean), not as "not a valid choice";
    # only BNE and DAN encoders are offered.
    first_stage = EncoderChoiceField(queryset=EncoderModel.objects.all(), to_field_name="name", required=False,
                                     label="First stage", empty_label="none: the transformer encodes every mention")
    # Ticked on the page; left out of a POST (the base encoders' own build forms, scripts): built, not activated.
    activate = forms.BooleanField(
        required=False, initial=True, label="Activate when built",
        help_text="It then serves the dictionary at once and the open mentions of its collections are re-linked; "
                  "untick to compare it first and promote it yourself.")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("auto_id", "build-%s")  # the base encoders' own build forms share the field names
        super().__init__(*args, **kwargs)
        # Choosing another dictionary or encoder re-renders the form with the first stage that fits them.
        refresh = {"hx-get": reverse("training:models"), "hx-target": "#index-build", "hx-swap": "outerHTML",
                   "hx-include": "#build-dictionary, #build-encoder"}
        self.fields["dictionary"].widget.attrs.update(refresh)
        self.fields["encoder"].widget.attrs.update(refresh)
        encoders = list(indexable_encoders())
        fast = fast_encoders()
        trained_on = dictionaries_of(encoders)
        self.fields["encoder"].trained_on = trained_on  # type: ignore[attr-defined]
        self.fields["first_stage"].trained_on = trained_on  # type: ignore[attr-defined]
        self.fields["first_stage"].choices = [("", self.fields["first_stage"].empty_label)] + [  # type: ignore[attr-defined]
            (e.name, describe_encoder(e, trained_on.get(e.pk))) for e in fast]
        self.suggested: EncoderModel | None = None
        self.fields["first_stage"].help_text = (
            f"Optional, for a transformer encoder: a BNE or DAN encoder of the same dictionary searched first; "
            f"{FIRST_STAGE_HELP}.")

    @classmethod
    def for_choice(cls, dictionary_slug: str | None = None, encoder_name: str | None = None) -> IndexBuildForm:
        """Unbound, with ``dictionary_slug`` (default: the first dictionary) and ``encoder_name`` ("": tf-idf only;
        None: the newest transformer trained on that dictionary, else the newest recording no dictionary), and the
        first stage :func:`suggested_first_stage` picks."""
        dictionaries = Dictionary.objects.order_by("slug")
        dictionary = dictionaries.filter(slug=dictionary_slug).first() if dictionary_slug else None
        dictionary = dictionary or dictionaries.first()
        if encoder_name is None:
            encoder = _default_encoder(dictionary)
        else:
            encoder = EncoderModel.objects.filter(name=encoder_name).first() if encoder_name else None
        suggested = suggested_first_stage(dictionary, encoder)
        form = cls(initial={"dictionary": dictionary, "encoder": encoder, "first_stage": suggested})
        form.suggested = suggested
        if encoder is None or encoder.kind != "transformer":
            # Shown, not offered: only a transformer takes one (submitted anyway, it is refused by name).
            form.fields["first_stage"].widget.attrs["disabled"] = True
            form.fields["first_stage"].help_text = (
                "Only for a transformer encoder: " + (
                    "a tf-idf-only index has none to stand in front of." if encoder is None
                    else f"a {encoder.kind_label} linker is fast already."))
        elif suggested is not None:
            form.fields["first_stage"].help_text = (
                f"Preselected: the newest {suggested.kind_label} encoder of {dictionary}. {FIRST_STAGE_HELP[0].upper()}"
                f"{FIRST_STAGE_HELP[1:]}.")
        return form

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        dictionary = data.get("dictionary")
        if dictionary is not None and "encoder" in data and "first_stage" in data:
            try:
                check_index_build(dictionary, data["encoder"], data["first_stage"])
            except IndexBuildError as exc:
                self.add_error(exc.field, str(exc))
        return data


def _default_encoder(dictionary: Dictionary | None) -> EncoderModel | None:
    transformers = [e for e in indexable_encoders() if e.kind == "transformer"]
    trained_on = dictionaries_of(transformers)
    mine = [e for e in transformers if dictionary is not None and trained_on.get(e.pk) == dictionary]
    unattached = [e for e in transformers if e.pk not in trained_on]
    return next(iter(mine + unattached), None)
