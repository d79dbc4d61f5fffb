"""What a study is for: tuning sweeps (`tune`), target setting, noise floors, batch-size and
sparsity scaling, the model-size ladder.

Imports: runners.launch, runners.run and everything below them; never cli (pyproject.toml's
import-linter contracts)."""
