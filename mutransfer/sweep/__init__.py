"""Sweeps on Optuna storages: the spec (``spec``; its axes, constants and command-line overrides: ``spec_axes``,
``spec_constants``, ``spec_overrides``), the plan built once from it (``plan``: the studies, as ``keys``, the tiers
they train in, the looks, and what each study waits for), which point to train next (``policy``), storages and
worker liveness (``storage``, ``liveness``), studies and their queue (``studies``), a trial's bookkeeping
attributes (``attrs``), one trial's config (``trial``), the worker loop (``worker``) and its parts: claiming a trial's point (``claims``), the plan's waits
read against the storage (``gates``: the learning-rate optimum, ``stage_gate``; the constants' rounds,
``constant_gate``; the looks, ``stopping``), failing dead workers' trials (``reaper``), heartbeats (``heartbeat``),
what trains a trial (``trainer``; a user's command: ``trainer_spec``, ``command_trainer``, ``child_process``) and
what Optuna is told (``outcomes``); the processes and progress (``runner``), the answer so far (``provisional``),
the tables read back from a storage (``tables``) and the worker-layout tuner (``layout``).
Simulated sweeps live in ``mutransfer.simulation``."""
