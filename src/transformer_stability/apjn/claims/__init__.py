"""Study A's claims: each sentence-level claim of the abstract, tested on the run's tables by
terms whose intervals decide the verdict (transformer_stability.verdicts): bootstraps over the
initializations or training seeds of the measured tables, the intervals the agreement tables
carry, and exact values for the theory. The rows of results/claims.csv and claim_terms.csv;
docs/apjn.md ("Claims") states the same statistics and criteria in words. One module per claim
(A.2 and A.5 with a helper module each), assembled here in the abstract's order."""

from transformer_stability.apjn.claims import (
    careful_tuning,
    depth_exponent,
    growth_laws,
    natural_images,
    recursions,
)
from transformer_stability.claims import ClaimSpec

CLAIMS: tuple[ClaimSpec, ...] = (
    recursions.CLAIM,
    depth_exponent.CLAIM,
    natural_images.CLAIM,
    growth_laws.CLAIM,
    careful_tuning.CLAIM,
)
