"""Training side of Pacebench (torch): workloads, algorithms, the timed loop, launching."""
