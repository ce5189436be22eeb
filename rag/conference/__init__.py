"""Questions about the conference as a list: catalog facets (counts, lists), exports (BibTeX, references, Markdown) and the map figures."""
