"""Operations: backup and restore of a workbench (backup, restore), and what an operator watches, the Prometheus
endpoint's figures (metrics, metrics_view). It reads every app below it, so it sits above them in the layers
(pyproject.toml), below the API and the tasks, and nothing imports it."""
