"""Many runs: a study's plan and launch order, the scheduler, worker processes and their logs,
resume, reuse from other stores, progress, estimates, and the local, Ray and Slurm backends.

Imports: runners.run and everything below it; never procedures or cli (pyproject.toml's
import-linter contracts)."""
