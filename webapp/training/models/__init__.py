"""training's models: the app's model module (Django's app registry loads every model from here).

By responsibility: encoders and word vectors (:mod:`.encoders`), index and detector versions (:mod:`.indexes`),
training runs and their examples (:mod:`.runs`), evaluations (:mod:`.evaluations`) and the learning loop's
settings (:mod:`.loop`).
"""

from webapp.training.models.encoders import EncoderModel, WordVectorModel, WordVectorUpload
from webapp.training.models.evaluations import Evaluation, MentionOutcome
from webapp.training.models.indexes import DetectorVersion, IndexVersion
from webapp.training.models.loop import PromotionGate, RetrainPolicy
from webapp.training.models.runs import (
    CANCELLED_BY_ADMIN,
    LOG_TAIL_LINES,
    TrainingExample,
    TrainingRun,
    append_log,
)

__all__ = [
    "CANCELLED_BY_ADMIN", "LOG_TAIL_LINES", "DetectorVersion", "EncoderModel", "Evaluation", "IndexVersion",
    "MentionOutcome", "PromotionGate", "RetrainPolicy", "TrainingExample", "TrainingRun", "WordVectorModel",
    "WordVectorUpload", "append_log",
]
