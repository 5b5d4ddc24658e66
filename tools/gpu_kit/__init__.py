"""The GPU proof kit behind tools/gpu_check: steps, output parsers and the report."""
