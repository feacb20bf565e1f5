"""Where a model's KV cache lives: the rows seam and its eager, static and compiled runners."""
