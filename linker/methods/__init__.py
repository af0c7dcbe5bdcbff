"""Training methods, one module each (``biosyn.py``; LATTE, BNE, DAN, HiPrBERT and the tagger to come), with
what they share in ``base.py``. :mod:`linker.recipe` keeps the table and is what callers use."""
