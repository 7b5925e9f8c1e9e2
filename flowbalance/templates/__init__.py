"""The template strategy: rotation-order permutation templates (sequence), Hungarian matching (matching),
and the placement of every selected topic on them (place)."""
