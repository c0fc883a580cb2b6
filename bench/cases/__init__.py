"""The cases of the benchmark suite, one module each (see bench/README.md)."""
