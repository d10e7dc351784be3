"""Study C: the parameter cost of counting with one attention layer (docs/counting.md)."""
