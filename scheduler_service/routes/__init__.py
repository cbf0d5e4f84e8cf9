"""The API's routes: one flask-smorest blueprint a resource, each route parsing its request
with ``scheduler_service.requests``, calling the application service
(``scheduler_service.service``) and answering through ``scheduler_service.presenting``."""
