"""eagle.frameworks: bridges to other array frameworks. ``eagle.frameworks.jax`` makes hawk
kernels JAX functions (and JAX functions graph nodes)."""
