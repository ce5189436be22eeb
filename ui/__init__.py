"""The front doors in the browser: the Gradio app (:mod:`ui.app`, one module per tab) and the MCP
server (:mod:`ui.mcp`).

Python imports this file before any module of the package, so the offline switches are set here,
once, before any of them imports gradio: no analytics, no hub (:func:`rag.offline.enforce`).
"""

from rag import offline

offline.enforce()
