"""Understanding a turn: the words' slots, the learned turn reader and the typed plan they make, the index's paper names, and the conversation so far."""
