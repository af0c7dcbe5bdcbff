"""The word-vector encoders' own fastText parameters, which a run that starts from word vectors drops
(:mod:`webapp.training.runs` reads them here). Every other parameter of fastText, BNE and DAN is declared by the
method (:mod:`linker.methods.word_vector_params`, :mod:`linker.methods.bne_params`, :mod:`linker.methods.dan_params`)."""

from linker.methods.word_vector_params import OWN_VECTOR_PARAMS

__all__ = ["OWN_VECTOR_PARAMS"]
