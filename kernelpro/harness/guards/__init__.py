"""The checks on a candidate: static rules on its source, dynamic guards around its calls, the comparison of its
outputs, the float64 oracle, and the judge's own state kept out of its reach."""
