"""`handler(event, context)` for AWS Lambda behind API Gateway HTTP APIs (payload 2.0) (SPEC §9 adapters).

The plain ASGI app (`functions/adapters/asgi_app.py`, configured from the environment: bundle
`evidence.sqlite` beside the code or set `MNOTE_EVIDENCE_DB`) adapted by Mangum (PyPI
`mangum`, the `lambda` extra). Same routes, same answers, same 4xx messages as every
other adapter; lifespan off (the app needs no start-up). The app is built once per
container, on the first event, and reused by the warm container.
Handler setting: `mnote_evidence.functions.adapters.lambda_handler.handler`.
"""

from __future__ import annotations

from mangum import Mangum

from mnote_evidence.functions.adapters.asgi_app import app

handler = Mangum(app, lifespan="off")
