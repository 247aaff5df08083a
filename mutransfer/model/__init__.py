"""The model side: the built-in GPT (``gpt``), building it or a user's module from a config and planning any
module (``build``), and applying a plan to a module — initialisation, forward multipliers, the optimizer
(``apply``). ``mutransfer.model_kinds`` chooses among the kinds of model."""
