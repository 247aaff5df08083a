"""The plan of a sweep, built once from its spec (``sweep_plan``): its studies as keys (``keys``), the tiers and
looks, what each study waits for; which point a study trains next (``policy``), one trial's config (``trial``),
and what the sweep will cost (``estimate``, from ``finished`` trials and ``measured_cost``)."""
