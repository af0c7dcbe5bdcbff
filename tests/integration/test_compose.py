"""docker/compose.yml is a valid Compose file and matches the code as it is: parsed and type-checked by the
compose_spec parser (the ``compose-spec`` package: the Rust crate's strict reader with YAML merge keys applied as
Compose applies them, then the Compose Specification's schema as a pydantic model), which needs no Docker engine;
then what that parser leaves to ``docker compose config`` (references between services and volumes) and what only
this project knows (the settings' variable names, the Celery queues, one beat, the image's command)."""

from __future__ import annotations

import ast
import json
import os
import re
import secrets
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import PROJECT_ROOT

compose_spec = pytest.importorskip(
    "compose_spec", reason="the compose-spec package (the Compose file validator, a dev dependency) cannot be installed here")

COMPOSE = PROJECT_ROOT / "docker" / "compose.yml"
DOCKERFILE = PROJECT_ROOT / "docker" / "Dockerfile"
APP_SERVICES = ("migrate", "web", "worker-cpu", "worker-interactive", "beat", "worker-gpu")


def _parse(text: str) -> Any:
    parsed = compose_spec.PyOptions(apply_merge=True).from_yaml(text)
    parsed.validate()  # the crate's own consistency checks
    parsed.to_spec()  # the Compose Specification's schema (pydantic)
    return parsed


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return _parse(COMPOSE.read_text()).to_dict()  # type: ignore[no-any-return]


def _command(service: dict[str, Any]) -> list[str]:
    command = service.get("command") or []
    return shlex.split(command) if isinstance(command, str) else list(command)


def _image_command() -> list[str]:
    """The Dockerfile's CMD (exec form, continuation lines joined)."""
    text = DOCKERFILE.read_text().replace("\\\n", " ")
    (line,) = [ln for ln in text.splitlines() if ln.startswith("CMD ")]
    return json.loads(line[len("CMD "):])  # type: ignore[no-any-return]


def test_the_compose_file_is_valid(compose: dict[str, Any]) -> None:
    assert set(compose["services"]) == {"postgres", "redis", *APP_SERVICES}
    assert set(compose["volumes"]) == {"pgdata", "redisdata", "artifacts"}


@pytest.mark.parametrize(("broken", "why"), [
    (("command: [\"celery\", \"-A\", \"webapp\", \"beat\"", "comand: [\"celery\", \"-A\", \"webapp\", \"beat\""),
     "extension key `comand` does not start with \"x-\""),
    (("{condition: service_completed_successfully}", "{condition: completed}"), "unknown variant `completed`"),
    (("count: 1, capabilities", "count: one, capabilities"), "expected \"all\" or an integer"),
])
def test_the_validator_refuses_a_broken_file(broken: tuple[str, str], why: str) -> None:
    text = COMPOSE.read_text()
    assert broken[0] in text
    with pytest.raises(ValueError, match=why.replace("`", ".").replace('"', '.')):
        _parse(text.replace(broken[0], broken[1], 1))


def test_every_reference_is_defined(compose: dict[str, Any]) -> None:
    # What `docker compose config` checks and the parser does not: depends_on names a service, a named volume is
    # declared at the top level.
    services, volumes = compose["services"], compose["volumes"]
    for name, service in services.items():
        for needed in service.get("depends_on") or {}:
            assert needed in services, f"{name} depends on {needed}, which is no service"
        for mount in service.get("volumes") or []:
            source = mount.split(":")[0] if isinstance(mount, str) else mount.get("source", "")
            if source and not source.startswith((".", "/", "~")):
                assert source in volumes, f"{name} mounts the undeclared volume {source}"


def test_migrations_run_once_before_the_app_starts(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert _command(services["migrate"]) == ["python", "manage.py", "migrate", "--noinput"]
    assert services["migrate"]["depends_on"] == {"postgres": {"condition": "service_healthy"}}
    for name in ("web", "worker-cpu", "worker-interactive", "beat", "worker-gpu"):
        assert services[name]["depends_on"]["migrate"] == {"condition": "service_completed_successfully"}, name


def _env_names_read_by_the_code() -> set[str]:
    """Every variable name the code reads: env helpers of webapp.env and os.environ / os.getenv, by the syntax tree."""
    helpers = {"envstr", "envbool", "envint", "envlist", "envdevice", "envchoice", "envcache"}
    names: set[str] = set()
    for root in ("webapp", "linker"):
        for path in (PROJECT_ROOT / root).rglob("*.py"):
            tree = ast.parse(path.read_text(), str(path))
            constants = {t.id: n.value.value for n in tree.body if isinstance(n, ast.Assign)
                         and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str)
                         for t in n.targets if isinstance(t, ast.Name)}  # DEVICE_ENV = "LINKER_DEVICE"
            for node in ast.walk(tree):
                key: ast.AST | None = None
                if isinstance(node, ast.Call) and node.args:
                    func = node.func
                    called = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
                    owner = ast.unparse(func.value) if isinstance(func, ast.Attribute) else ""
                    if called in helpers or (owner == "os.environ" and called in ("get", "setdefault")) \
                            or ast.unparse(func) == "os.getenv":
                        key = node.args[0]
                elif isinstance(node, ast.Subscript) and ast.unparse(node.value) == "os.environ":
                    key = node.slice
                if isinstance(key, ast.Constant) and isinstance(key.value, str):
                    names.add(key.value)
                elif isinstance(key, ast.Name) and key.id in constants:
                    names.add(constants[key.id])
    return names


def test_every_variable_given_to_the_app_is_one_the_code_reads(compose: dict[str, Any]) -> None:
    known = _env_names_read_by_the_code()
    assert {"DATABASE_URL", "SECRET_KEY", "SECURE_HSTS_SECONDS", "LINKER_DEVICE", "LINKER_SERVING_DEVICE"} <= known
    for name in APP_SERVICES:
        unknown = sorted(set(compose["services"][name]["environment"]) - known)
        assert not unknown, f"{name} sets {unknown}, which no settings or linker code reads"


def test_the_workers_cover_the_celery_queues_and_one_process_runs_beat(compose: dict[str, Any]) -> None:
    from webapp.celery import app

    queues = {q.name for q in app.conf.task_queues}
    assert queues == {"default", "gpu", "interactive"}
    consumed: dict[str, set[str]] = {}
    beats = []
    for name, service in compose["services"].items():
        command = _command(service)
        if command[:3] != ["celery", "-A", "webapp"]:
            continue
        if command[3] == "beat":
            beats.append(name)
        elif command[3] == "worker":
            consumed[name] = set(command[command.index("-Q") + 1].split(","))
            if "-B" in command or "--beat" in command:
                beats.append(name)
    # Short work has a worker of its own: no worker that takes it also takes a queue of long jobs.
    assert consumed == {"worker-cpu": {"default"}, "worker-interactive": {"interactive"}, "worker-gpu": {"gpu"}}
    assert beats == ["beat"], "the beat schedule must run in exactly one process"


def test_web_serves_the_wsgi_app_with_gunicorn_and_the_gpu_worker_gets_the_gpu(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert "command" not in services["web"]
    assert _image_command()[:2] == ["gunicorn", "webapp.wsgi"]
    assert services["web"]["ports"] == ["8000:8000"]
    assert (PROJECT_ROOT / "webapp" / "wsgi.py").exists()
    # Served linkers stay on the CPU (LINKER_SERVING_DEVICE unset: cpu); batch work on the GPU worker only.
    assert services["web"]["environment"]["LINKER_DEVICE"] == "cpu"
    assert "LINKER_SERVING_DEVICE" not in services["web"]["environment"]
    gpu = services["worker-gpu"]
    assert gpu["environment"]["LINKER_DEVICE"] == "cuda"
    assert gpu["build"]["args"] == {"TORCH_VARIANT": "cuda"}
    assert gpu["deploy"]["resources"]["reservations"]["devices"] == [{"driver": "nvidia", "count": 1, "capabilities": ["gpu"]}]
    for name in APP_SERVICES:
        assert "artifacts:/var/lib/workbench/artifacts" in services[name]["volumes"], name
        assert services[name]["environment"]["ARTIFACT_ROOT"] == "/var/lib/workbench/artifacts"


def test_the_image_copies_what_the_app_needs() -> None:
    text = DOCKERFILE.read_text()
    for folder in ("linker", "webapp", "tasks", "templates"):
        assert f"COPY {folder} {folder}" in text
        assert (PROJECT_ROOT / folder).is_dir()
    assert "PYTHONPATH=/app" in text
    assert Path(PROJECT_ROOT / "manage.py").exists()


# --- manage.py check --deploy under the stack's environment ----------------------------------------------------

_VARIABLE = re.compile(r"\$\{(?P<name>[A-Z_][A-Z0-9_]*)(?:(?P<op>:-|:\?)(?P<arg>[^}]*))?\}")


def _interpolate(value: str, given: dict[str, str]) -> str:
    """Compose's interpolation for the forms the file uses: ``${X}``, ``${X:-default}``, ``${X:?message}``."""
    def one(match: re.Match[str]) -> str:
        name, op, arg = match["name"], match["op"], match["arg"]
        if given.get(name):
            return given[name]
        if op == ":?":
            raise KeyError(f"{name}: {arg}")
        return arg if op == ":-" else ""

    return _VARIABLE.sub(one, value)


def test_the_web_environment_passes_check_deploy_with_no_warning(compose: dict[str, Any], tmp_path: Path) -> None:
    # docker/.env as docs/production.md writes it: the two required variables, nothing else.
    dotenv = {"SECRET_KEY": secrets.token_urlsafe(50), "ALLOWED_HOSTS": "workbench.example.org",
              "CSRF_TRUSTED_ORIGINS": "https://workbench.example.org"}
    with pytest.raises(KeyError, match="SECRET_KEY: set SECRET_KEY in docker/.env"):
        _interpolate(compose["services"]["web"]["environment"]["SECRET_KEY"], {})
    env = {k: _interpolate(str(v), dotenv) for k, v in compose["services"]["web"]["environment"].items()}
    assert env["DEBUG"] == "false" and env["SECURE_COOKIES"] == "true" and env["SECURE_HSTS_SECONDS"] == "31536000"
    # This machine's database and broker stand in for the stack's hosts, and a scratch folder for its volume.
    # DJANGO_ALLOW_ASYNC_UNSAFE is the browser tests' (tests/e2e/conftest.py sets it for the whole run): no stack has it.
    here = {k: v for k, v in os.environ.items()
            if k not in env and not k.startswith(("SECURE_", "LINKER_")) and k != "DJANGO_ALLOW_ASYNC_UNSAFE"}
    env |= {"DATABASE_URL": os.environ.get("DATABASE_URL", env["DATABASE_URL"]),
            "CELERY_BROKER_URL": os.environ.get("CELERY_BROKER_URL", env["CELERY_BROKER_URL"]),
            "ARTIFACT_ROOT": str(tmp_path / "artifacts"), "EMBEDDED_DATA_DIR": str(tmp_path)}
    if "DATABASE_URL" not in os.environ:  # the embedded PostgreSQL of this run, in its own data folder
        env.pop("DATABASE_URL")
        env.pop("CELERY_BROKER_URL")
        env.pop("EMBEDDED_DATA_DIR")
    result = subprocess.run([sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
                            cwd=PROJECT_ROOT, env={**here, **env}, capture_output=True, text=True, timeout=180)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "System check identified no issues (0 silenced)." in output


# --- docker/.env.example --------------------------------------------------------------------------------------

ENV_EXAMPLE = PROJECT_ROOT / "docker" / ".env.example"
# Read by the code but not an operator's to set: Django's and Hugging Face's own switches (the app sets them), the
# test suite's private worker queue, the linker command line's traceback switch and the desktop session's folder.
NOT_FOR_OPERATORS = {"DJANGO_SETTINGS_MODULE", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "TASK_QUEUE_OVERRIDE",
                     "LINKER_TRACEBACK", "XDG_RUNTIME_DIR"}


def _example_names() -> list[str]:
    """The variables docker/.env.example sets (``NAME=``) or shows with their default (``# NAME=``)."""
    return re.findall(r"^(?:# )?([A-Z][A-Z0-9_]*)=", ENV_EXAMPLE.read_text(), re.MULTILINE)


def _documented_names() -> set[str]:
    """The variables the first column of the tables of docs/configuration.md, production.md and sso.md names."""
    names: set[str] = set()
    for page in ("configuration.md", "production.md", "sso.md"):
        for line in (PROJECT_ROOT / "docs" / page).read_text().splitlines():
            if line.startswith("| `"):
                names |= set(re.findall(r"`([A-Z][A-Z0-9_]+)`", line.split("|")[1]))
    return names


def test_the_env_example_lists_every_variable_once_and_only_real_ones(compose: dict[str, Any]) -> None:
    names = _example_names()
    assert len(names) == len(set(names)), sorted({n for n in names if names.count(n) > 1})
    interpolated = {m["name"] for m in _VARIABLE.finditer(COMPOSE.read_text())}
    known = _env_names_read_by_the_code() | interpolated
    assert not sorted(set(names) - known), "docker/.env.example names variables nothing reads"
    missing = sorted(_env_names_read_by_the_code() - NOT_FOR_OPERATORS - set(names))
    assert not missing, f"docker/.env.example lacks {missing}"
    assert interpolated <= set(names), sorted(interpolated - set(names))


def test_every_documented_variable_is_in_the_env_example() -> None:
    documented = _documented_names()
    assert {"DATABASE_URL", "OIDC_RP_CLIENT_ID", "METRICS_TOKEN"} <= documented
    assert not sorted(documented - set(_example_names())), "documented in docs/ but not in docker/.env.example"
    undocumented = sorted(set(_example_names()) - documented - {"POSTGRES_PASSWORD"})
    assert not undocumented, f"docker/.env.example names {undocumented}, which no table of docs/ explains"


def test_the_env_example_names_the_required_values_without_a_secret() -> None:
    text = ENV_EXAMPLE.read_text()
    for required in ("SECRET_KEY=", "ALLOWED_HOSTS=", "POSTGRES_PASSWORD="):
        assert re.search(rf"^{required}", text, re.MULTILINE), required
    assert re.search(r"^SECRET_KEY=$", text, re.MULTILINE), "the example must not ship a usable secret key"
    assert re.search(r"^POSTGRES_PASSWORD=$", text, re.MULTILINE)
