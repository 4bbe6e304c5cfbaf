"""Drasi's own engine (drasi-lib, import ``drasi``) as the oracle: the one place that drives it.

- :mod:`tests.oracle.child`: the child process every drasi-lib run happens in (the test
  process never loads drasi-lib) and the Drasi instances it creates;
- :mod:`tests.oracle.cases`: cases of changes pushed in order, each diff attributed to its
  change (the differential test, probes, scenarios, the function tests);
- :mod:`tests.oracle.plans`: timed plans on Drasi's wall clock (future functions), and the
  same plans through drasi_ray's engine on an injected clock;
- :mod:`tests.oracle.engines`: a few queries over a few changes through both engines;
- :mod:`tests.oracle.model`: the records both engines' runs are made of;
- :mod:`tests.oracle.values`: comparing values with their types.
"""
