# One image for every robocell process; the solver tables are built at image build time.
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PIP_NO_CACHE_DIR=1 ROBOCELL_TABLES=/opt/robocell/tables
WORKDIR /opt/robocell
COPY pyproject.toml README.md ./
COPY robocell ./robocell
RUN pip install . && robocell tables build
CMD ["robocell", "--help"]
