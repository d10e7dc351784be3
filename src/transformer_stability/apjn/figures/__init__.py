"""Study A's figures, one module per figure: its plot function and, right below it, its
`FIGURE` declaration (plotting.figures_in finds them). Modules named with a leading underscore
hold the helpers several figures share. This file imports nothing, so that a figure's code input
(code_inputs.module_closure) is its own module and the helpers it uses: editing one plot or caption
redraws that figure alone."""
