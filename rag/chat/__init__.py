"""One chat turn end to end: the plan's operations, the answer stream by mode (extractive, constrained, generative) and the backends built once from settings."""
