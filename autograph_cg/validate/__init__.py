"""`autograph-cg validate`: run a model eagerly and with CUDA graphs, and hold the analyzer's verdicts against the run.

Unlike the analyzer, this imports and runs user code, on purpose.
"""

from autograph_cg.validate.outcome import ClassResult, Disagreement, Outcome, PassResult, Validation
from autograph_cg.validate.runner import Settings, validate
from autograph_cg.validate.target import TargetError

__all__ = ["validate", "Settings", "Validation", "ClassResult", "PassResult", "Outcome", "Disagreement", "TargetError"]
