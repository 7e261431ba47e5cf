"""The book: building it (:mod:`.build`), chapter helpers (:mod:`.chapter`, :mod:`.findings`), plots in one house style (:mod:`.plots`) and the paper's reported numbers (:mod:`.paper`)."""
