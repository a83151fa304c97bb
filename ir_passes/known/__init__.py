"""What the pass knows about functions it does not differentiate through: memory effects of
runtime and library calls (`memory`), BLAS calls and their emitters (`blas`), and why a call
cannot be differentiated (`calls`). A layer below the analyses: it imports only `ir`."""
