"""The report labels of Study C's figure declarations: every figure fills the same keys (the
columns of its row in the report), so one function serves them all."""


def report_labels(code: str, quantity: str, placement: str):
    """A figure's labels: its code, what it shows and the placements it draws."""
    return lambda config: {
        "figure": code,
        "quantity": quantity,
        "placement": placement,
        "readout": "regression, classification",
    }
