"""Running a sweep: its processes (``runner``), the worker loop (``worker``) and its parts (``claims``, ``gates``,
``stage_gate``, ``constant_gate``, ``stopping``, ``trainer``, ``command_trainer``, ``child_process``, ``outcomes``,
``repeats``), the answer so far (``provisional``) and the worker-layout tuner (``layout``)."""
