"""What agents may call, each a real implementation."""
