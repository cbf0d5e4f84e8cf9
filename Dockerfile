# One image for the four components; the command picks which one runs.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
WORKDIR /app
COPY pyproject.toml README.md ./
COPY shared ./shared
COPY scheduler_service ./scheduler_service
COPY processor_worker ./processor_worker
COPY polling_worker ./polling_worker
COPY execution_worker ./execution_worker
COPY scheduler_cli ./scheduler_cli
COPY scheduler_client ./scheduler_client
RUN pip install --no-cache-dir . && useradd --uid 10001 --no-create-home scheduler
USER scheduler
EXPOSE 8080
CMD ["scheduler", "api"]
