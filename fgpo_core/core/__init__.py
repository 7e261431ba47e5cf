"""The paper's objects that know nothing of models: the action space, the rewards, dead groups and the estimators."""
