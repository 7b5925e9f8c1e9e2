"""Flow networks as numpy arrays (arcs in, flows out), and the solvers that run them."""
