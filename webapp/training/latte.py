"""The linker a LATTE run re-ranks over.

LATTE (:mod:`linker.methods.latte`) trains a re-ranker over an existing linker: by default the dictionary's
active index version, fixed when the run is queued (``params["base_index"]``), so that a promotion while the
run waits does not change what it trains over. The re-ranker reads the token states of the linker's
transformer, so a sparse-only index cannot be its base. Its parameters are :class:`linker.methods.latte_params.LatteParams`.
"""

from __future__ import annotations

from webapp.artifacts.manifests import is_available
from webapp.linking.models import IndexVersion
from webapp.training.errors import RunError
from webapp.vocab.models import Dictionary


def base_index(dictionary: Dictionary, index_id: int = 0) -> IndexVersion:
    """The index a LATTE run re-ranks over: ``index_id`` or the dictionary's active one; a RunError says why
    there is none to use."""
    indexes = IndexVersion.objects.select_related("encoder", "dictionary_version").filter(dictionary=dictionary)
    if index_id:
        index = indexes.filter(pk=index_id).first()
        if index is None:
            raise RunError(f"index version {index_id} does not belong to dictionary {dictionary.slug!r}")
        if index.state not in (IndexVersion.State.READY, IndexVersion.State.ACTIVE, IndexVersion.State.RETIRED):
            raise RunError(f"index version {index_id} is {index.state}; LATTE re-ranks over a built index")
    else:
        index = indexes.filter(state=IndexVersion.State.ACTIVE).first()
        if index is None:
            raise RunError(f"dictionary {dictionary.slug!r} has no active index: LATTE re-ranks the candidates of "
                           "the active model, so build and activate an index (dense, with an encoder) first")
    if index.encoder_id is None:
        raise RunError(f"index version {index.pk} ({index.label}) is sparse-only: LATTE reads the token states of "
                       "the index's transformer, so build a dense index (with an encoder) first")
    if not index.artifact_path or not is_available(index.artifact_path, "config.json"):
        raise RunError(f"index version {index.pk} has no artifact folder at {index.artifact_path or '(none)'}")
    return index
