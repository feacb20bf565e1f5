"""The speculative step itself: the engine's loop over rows, acceptance rules, chain and tree steps."""
