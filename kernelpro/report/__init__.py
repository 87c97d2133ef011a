"""A run's report: what was tried, what it led to, and what it cost."""

from kernelpro.report.summary import RoleUsage, RunSummary
from kernelpro.report.writer import ReportPaths, write_report

__all__ = ["ReportPaths", "RoleUsage", "RunSummary", "write_report"]
