"""Layer 7, agreement: inter-annotator coefficients, bootstrap intervals and the corpus report.

The coefficients (`coefficients`) are re-exported here, so `agreement.fleiss_kappa(...)` reads
as before. `kold-span agreement` is `report` (read → build → write), over `ratings` (examples → a
ratings table), `stats` (a table's coefficients, bias, entropy, spans), `bootstrap` (the intervals),
`render` (report.md, the summary) and `plots` (the PNGs).
"""
from kold_span.agreement.coefficients import (KAPPA_BANDS, KAPPA_WEIGHTS, LEVELS, annotator_bias, bootstrap_ci,
                                              cohen_kappa_pairwise, fleiss_kappa, hard_cases, interpret_kappa,
                                              is_number, item_entropy, krippendorff_alpha, majority_label,
                                              mean_pairwise_cohen, numeric_labels, ordered_labels, span_agreement,
                                              unanimity)

__all__ = ["KAPPA_BANDS", "KAPPA_WEIGHTS", "LEVELS", "annotator_bias", "bootstrap_ci", "cohen_kappa_pairwise",
           "fleiss_kappa", "hard_cases", "interpret_kappa", "is_number", "item_entropy", "krippendorff_alpha",
           "majority_label", "mean_pairwise_cohen", "numeric_labels", "ordered_labels", "span_agreement",
           "unanimity"]
