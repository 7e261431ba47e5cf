"""The book: building it (:mod:`.build`), chapter helpers (:mod:`.chapter`), checked claims
(:mod:`.claims`), the page scan (:mod:`.scan`), plots in one house style (:mod:`.plots`) and the
paper's reported numbers (:mod:`.paper`).
"""
