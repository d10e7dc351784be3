"""Study N's claims (docs/numerics.md, "Claims"), each tested on the run's tables: bounds that
hold and are not loose where they are claimed tight, LayerNorm against RMSNorm under an
outlier, the softmax bound under a sink, shifted evaluation, the length-free attention bound,
the worst-case recursion and GPT-2's relative error across residual scalings, attention sinks
in training. Every decisive statistic is a verdicts.Term: the sampled ones (medians over the
rounding experiments' samples, over the heads of a model) carry a bootstrap interval over their
replication units; counts, per-draw slopes and the GPT-2 tables' quantiles (which hold no
replication units) are exact. Torch-free, like the tables: the claims rule reads tables only.

One module per claim or group of claims on the same experiment; this module puts them in the
abstract's order."""

from transformer_stability.claims import ClaimSpec
from transformer_stability.numerics.claims.bounds import N1, N5
from transformer_stability.numerics.claims.gpt2_errors import N7, N8
from transformer_stability.numerics.claims.norm_outlier import N2
from transformer_stability.numerics.claims.sinks import N9
from transformer_stability.numerics.claims.softmax_evaluation import N3, N4
from transformer_stability.numerics.claims.worst_case import N6

CLAIMS: tuple[ClaimSpec, ...] = (N1, N2, N3, N4, N5, N6, N7, N8, N9)
