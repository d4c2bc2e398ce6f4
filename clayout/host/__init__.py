"""The NumPy implementations: what runs when OpenCL does not."""
