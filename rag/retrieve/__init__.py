"""Hybrid retrieval: dense chunks from Chroma and BM25 papers, fused by the learned fusion model, with the dense channel's coverage while an index is still being filled in."""
