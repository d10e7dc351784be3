"""Study C's claims (docs/counting.md, "Claims"): each sentence of the abstract tested on the
run's tables by a statistic that the contrary science would fail, as terms whose intervals
decide the verdict (verdicts.py). One module per claim or pair of claims, named for what it
tests; `_common` holds what several share. Theory curves, LP bounds, verified constructions
and counts carry no sampling noise (exact estimates); only the trained grid of C.6 carries
any."""

from transformer_stability.claims import ClaimSpec
from transformer_stability.counting.claims.classification_readout import (
    CLASSIFICATION_IS_BOUNDED,
)
from transformer_stability.counting.claims.exactness import (
    LINEAR_IS_EXACT,
    SOFTMAX_IS_NEVER_EXACT,
)
from transformer_stability.counting.claims.growth_laws import BMIN_FOLLOWS_THE_LAWS
from transformer_stability.counting.claims.prenorm_wall import PRENORM_HAS_A_WALL
from transformer_stability.counting.claims.trained_split import TRAINING_REPRODUCES_THE_SPLIT

CLAIMS: tuple[ClaimSpec, ...] = (
    LINEAR_IS_EXACT,
    SOFTMAX_IS_NEVER_EXACT,
    BMIN_FOLLOWS_THE_LAWS,
    PRENORM_HAS_A_WALL,
    CLASSIFICATION_IS_BOUNDED,
    TRAINING_REPRODUCES_THE_SPLIT,
)
