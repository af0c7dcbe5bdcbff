"""Serving: mention -> ranked candidates, in the web processes and workers that hold a linker loaded.

The linker each process serves and keeps in step with curator synonyms (:mod:`.registry`), the mention tagger it
serves (:mod:`.taggers`), where their models compute (:mod:`.devices`) and which index and detector versions are
active (:mod:`.versions`). Curation asks here for candidates; training builds, trains and promotes what is served.
"""
