"""Profiling tools: ncu collection, the metric model, static ptxas/SASS analysis, roofline stage 1, diagnosers."""
