"""Study N's figures, one module per figure (`n<k>_<name>.py`, each with its plot and its
`FIGURE` declaration; underscore modules hold helpers shared by several figures). Nothing is
imported here: a figure's code input is its own module's import closure, so editing one plot
or caption redraws that figure alone (transformer_stability.plotting.figures_in finds them)."""
