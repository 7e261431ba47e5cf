"""Experiments: one run (:mod:`.run`), the grid of the LM chapter (:mod:`.grid`), reading runs back (:mod:`.report`) and bringing old run folders up to date (:mod:`.migrate`)."""
