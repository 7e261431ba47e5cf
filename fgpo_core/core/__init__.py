"""The paper's objects that know nothing of models: the action space, the rewards, dead groups and the
estimators (:mod:`.estimators`), one registered object per method (:mod:`.registry`), the
method-name grammar generated from it (:mod:`.method_names`) and the shortlists of candidate subsets
(:mod:`.shortlists`).
"""
