"""How the API presents what it answers: the response schemas the OpenAPI document shows
(``schemas`` for schedules, ``run_schemas`` for runs and dead letters, on the fields of
``fields``), the views of the domain a client is shown (``views``: secrets masked, instants as
UTC/local pairs), and the RFC 7807 problems every error becomes (``problems``)."""
