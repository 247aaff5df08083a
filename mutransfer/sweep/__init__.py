"""Sweeps on Optuna storages: the spec (``spec``; its axes, constants and command-line overrides: ``spec_axes``,
``spec_constants``, ``spec_overrides``), which point to train next (``policy``), storages and
worker liveness (``storage``, ``liveness``), studies and their queue (``studies``), one trial's config
(``trial``), the worker loop (``worker``) and its parts: claiming a trial's point (``claims``), waiting for the
learning-rate optimum (``stage_gate``), failing dead workers' trials (``reaper``), heartbeats (``heartbeat``),
what trains a trial (``trainer``; a user's command: ``trainer_spec``, ``command_trainer``, ``child_process``) and
what Optuna is told (``outcomes``); the processes and progress
(``runner``), the order studies train in (``order``), the answer so far (``provisional``), stopping a setup once
decided (``stopping``), the tables read back from a storage (``tables``) and the worker-layout tuner
(``layout``).
Simulated sweeps live in ``mutransfer.simulation``."""
