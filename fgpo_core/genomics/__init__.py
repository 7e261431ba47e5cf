"""Genomics: sequences shipped in packages (:mod:`.data`), the tools (:mod:`.tools`), the question
suites (:mod:`.benchmarks`) and the evidence reader's curriculum (:mod:`.curriculum`).
"""
