"""Study C: the parameter cost of counting with one attention layer (shared/specs/counting.md)."""
