"""What a curator's decision teaches: the one rule, for the decision service, the panel and the training data.

A decision teaches in two ways. Its text becomes a name (a curator synonym) of the concept it links, which the
live index, the next index build and concept search read at once, for every curator; and it is evidence for
training: a (text, concept) pair, the candidates ranked above the chosen one as hard negatives, and a count
towards the retrain trigger. A wrong lesson therefore reaches everyone at once: a link to a parent ("hereditary
breast cancers" to Neoplasms by Site, issue 41) made the parent a candidate for every later "breast cancer".

A decision teaches nothing when:

* the curator decides without teaching (the panel's toggle ``t``, the API's ``teach: false``);
* it links a parent (``via`` "parent"): the parent is less specific than the text, so the text is not its name,
  and the candidates above it (the more specific concepts) are not wrong;
* it was auto-accepted (the linker agreeing with itself), or made in a project annotator's workspace (one
  annotator's choice, taught once adjudicated).

A decision that teaches adds a name unless it links nothing (NIL, a rejected span: a detector negative, not a
linking one) or its text is the whole text of a composite mention without part texts ("breast and ovarian
cancer" names neither part's concept).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Q

from webapp.curation.models import Decision
from webapp.vocab.models import Concept

__all__ = ["Lesson", "lesson", "teaching_decisions"]

Action = Decision.Action
Via = Decision.Via

# Why a decision teaches nothing, in the curator's words (the panel and the decision's summary show them).
NOT_TAUGHT = "decided without teaching"
PARENT = "a parent is less specific than the text"
AUTO = "auto-accepted: the linker agreeing with itself"
WORKSPACE = "an annotator's copy teaches once adjudicated"
REJECTED = "a rejected span is not a mention"
NIL = "NIL links no concept"
COMPOSITE = "the whole text of a composite mention names no single part"


@dataclass(frozen=True)
class Lesson:
    """What one decision on one part teaches: evidence for training, and the name it gives its concept."""

    teaches: bool  # training evidence: a (text, concept) pair or a NIL, hard negatives, a count towards a retrain
    name: str = ""  # the text that becomes a name of ``concept`` ("" none)
    concept: Concept | None = None
    reason: str = ""  # why no name is taught ("" when one is)

    def describe(self) -> str:
        """The panel's words: "teaches “x” as a name of Y" or "teaches nothing (why)"."""
        if self.name and self.concept is not None:
            return f"teaches “{self.name}” as a name of {self.concept.preferred_name}"
        if self.teaches:
            return f"teaches no name ({self.reason})"
        return f"teaches nothing ({self.reason})"


def lesson(
    *, action: str, via: str, text: str, concept: Concept | None, teach: bool = True, workspace: bool = False,
    whole_text_of_parts: bool = False,
) -> Lesson:
    """What a decision teaches (the module's rule). ``whole_text_of_parts``: ``text`` is a composite mention's whole
    text (it has parts but no text per part); ``workspace``: the mention is a project annotator's copy."""
    reason = (
        NOT_TAUGHT if not teach
        else PARENT if via == Via.PARENT
        else AUTO if via == Via.AUTO
        else WORKSPACE if workspace
        else ""
    )
    if reason:
        return Lesson(teaches=False, reason=reason)
    if action == Action.REJECT:
        return Lesson(teaches=True, reason=REJECTED)  # evidence that the span is no mention, for the detector
    if concept is None:
        return Lesson(teaches=True, reason=NIL)
    if whole_text_of_parts:
        return Lesson(teaches=True, concept=concept, reason=COMPOSITE)
    return Lesson(teaches=True, name=text.strip(), concept=concept)


def teaching_decisions(prefix: str = "") -> Q:
    """The decisions that are training evidence (``prefix``: the path to Decision, e.g. "decision__"). The
    conditions beside the stored flag keep decisions logged before the flag existed to the same rule."""
    return Q(**{f"{prefix}teaches": True}) & ~Q(**{f"{prefix}via__in": [Via.AUTO, Via.PARENT]}) & Q(
        **{f"{prefix}document__collection__is_workspace": False}
    )
