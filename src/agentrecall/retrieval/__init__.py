"""Pure scoring logic shared by the stores: tokenizing and keyword overlap."""

from agentrecall.retrieval.tokenize import STOP_WORDS, overlap_score, tokenize

__all__ = ["STOP_WORDS", "overlap_score", "tokenize"]
