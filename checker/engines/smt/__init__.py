"""checker/engines/smt: the SMT engines (z3), imported where they run; what a command line
names of them lives here, so that naming one loads no solver."""

METHODS = ("kind", "pdr")  # the proof methods of `induction.Prove`
