"""Scoring selectors: their picks (:mod:`.picks`), the comparisons between them (:mod:`.metrics`) and analyses of how training moves them (:mod:`.analyses`)."""
