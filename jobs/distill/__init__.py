"""``specsweep distill``: training a drafter for a target — an independent small draft (``draft.py``) or an EAGLE
feature head (``eagle.py``), both from the target's own answers."""
