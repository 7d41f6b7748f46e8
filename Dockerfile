# One image for every robocell process; the tables of the cell's robot profile are built at
# image build time (--build-arg ROBOCELL_PROFILE=six-motor for another; another profile's
# tables are built on first use).
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PIP_NO_CACHE_DIR=1 ROBOCELL_TABLES=/opt/robocell/tables
ARG ROBOCELL_PROFILE=soltvvo-2x2
WORKDIR /opt/robocell
COPY pyproject.toml README.md ./
COPY robocell ./robocell
RUN pip install . && robocell tables build --profile "$ROBOCELL_PROFILE"
CMD ["robocell", "--help"]
