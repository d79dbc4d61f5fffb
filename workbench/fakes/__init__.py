"""The parts of workbench.testing, one concern each: `runs` (the synthetic run, its document
and how it is written), `planned` (stores whose every time to target is planned), `tables`
(in-memory inputs for scoring) and `ladders` (fake model-size ladders). Import them from
workbench.testing, the public face."""
