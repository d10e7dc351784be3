"""Study C's figures, one module per figure (`c<k>_<name>.py`: its plot function and, right
below it, its `FIGURE` declaration with caption and report labels); modules named with a
leading underscore hold helpers that several figures share. A plot takes tidy tables and
returns a matplotlib Figure: it draws what the data rules computed (fits, the pre-norm wall,
reference laws and the exponent table live in counting/derived_tables.py) and computes nothing
itself.

Nothing is imported here, so that a figure's code input (its module's import closure) is its
own module and the helpers it uses: editing one plot or caption redraws that figure alone.
transformer_stability.plotting.figures_in finds the declarations."""
