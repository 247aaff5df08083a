"""The abc table: (preset, optimizer, width) → per-parameter init, multiplier, LR and update rule.

Pure data in, numbers out: nothing here imports torch. ``rules`` holds the shape rules, ``plan`` the
evaluated table and its file format, ``roles`` the glob patterns that give a user's parameters roles,
``decay`` the weight-decay rules, ``record`` a config as the plain data files store.
"""
