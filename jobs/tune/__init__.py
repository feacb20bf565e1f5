"""`specsweep tune`: a policy's parameters fitted by replay on stored traces, judged on held-out questions."""
