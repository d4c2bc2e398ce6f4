"""Everything that generates, builds and launches OpenCL kernels."""
