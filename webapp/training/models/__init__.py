"""training's models: the app's model module (Django's app registry loads every model from here).

By responsibility: word vectors (:mod:`.word_vectors`), training runs and their examples (:mod:`.runs`), evaluations (:mod:`.evaluations`) and the learning loop's
settings (:mod:`.loop`). The encoders, index versions and detector versions that training makes are serving's
(:mod:`webapp.linking.models`).
"""

from webapp.training.models.evaluations import Evaluation, MentionOutcome
from webapp.training.models.loop import PromotionGate, RetrainPolicy
from webapp.training.models.runs import (
    CANCELLED_BY_ADMIN,
    LOG_TAIL_LINES,
    TrainingExample,
    TrainingRun,
    append_log,
)
from webapp.training.models.word_vectors import WordVectorModel, WordVectorUpload

__all__ = [
    "CANCELLED_BY_ADMIN", "LOG_TAIL_LINES", "Evaluation",
    "MentionOutcome", "PromotionGate", "RetrainPolicy", "TrainingExample", "TrainingRun", "WordVectorModel",
    "WordVectorUpload", "append_log",
]
