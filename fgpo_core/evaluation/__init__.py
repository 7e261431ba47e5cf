"""Scoring selectors: their picks (:mod:`.picks`), the comparisons between them (:mod:`.metrics`), the
book's rule for a difference (:mod:`.difference`) and for in- and out-of-domain questions (:mod:`.domains`)."""
