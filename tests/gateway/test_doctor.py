from pathlib import Path

from redis import Redis

from agent.testing import FakeLLM
from gateway.doctor import run_doctor
from gateway.manifest import BOT_SCOPES
from gateway.sandbox.embedded_redis import EmbeddedRedis
from gateway.sandbox.fake_forge import FakeForge
from gateway.sandbox.fake_slack import FakeSlack, Fault
from gateway.sandbox.ports import free_port
from gateway.sandbox.stack import BOT_TOKEN
from jobs.settings import Settings
from tests.conftest import FORGE_TOKEN
from tests.mcp_fixture import McpFixture
from tests.polling import wait_for
from tests.sentinel_redis import SentinelRedis


def named(lines: list[str], check: str) -> str:
    return next(line for line in lines if line.split()[1] == check)


def test_everything_reachable_is_all_ok(
    tmp_path: Path, durable_redis_url: str, fake_slack: FakeSlack, fake_llm: FakeLLM
):
    settings = Settings.load(
        REDIS_URL=durable_redis_url, SLACK_BOT_TOKEN=BOT_TOKEN, SLACK_API_URL=fake_slack.api_url,
        LLM_BASE_URL=fake_llm.base_url, LLM_MODEL="m", AGENT_WORKDIR=tmp_path / "ws",
        SLACK_APPROVERS="U0APPROVER",
    )  # fmt: skip
    lines: list[str] = []
    assert run_doctor(settings, lines.append) == 0
    assert [line.split()[0:2] for line in lines] == [
        ["ok", "redis"],
        ["ok", "persist"],
        ["ok", "replicas"],
        ["ok", "storage"],
        ["ok", "slack"],
        ["ok", "model"],
        ["ok", "workspace"],
        ["ok", "sandbox"],
        ["ok", "approvers"],
    ]


def test_each_problem_gets_one_line_with_its_fix(tmp_path: Path, fake_slack: FakeSlack):
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    settings = Settings.load(
        REDIS_URL="redis://127.0.0.1:9/0", SLACK_BOT_TOKEN="xoxb-wrong", SLACK_API_URL=fake_slack.api_url,
        LLM_BASE_URL="http://127.0.0.1:9/v1", LLM_MODEL="m", AGENT_WORKDIR=blocked / "ws",
    )  # fmt: skip
    lines: list[str] = []
    assert run_doctor(settings, lines.append) == 1
    assert len(lines) == 9 and all(line.startswith("FAIL") and "-- fix: " in line for line in lines)
    assert "invalid_auth" in named(lines, "slack")


def test_no_model_endpoint_means_the_demo_model(tmp_path: Path):
    lines: list[str] = []
    run_doctor(Settings.load(AGENT_WORKDIR=tmp_path), lines.append)
    assert named(lines, "model").startswith("ok   model") and "demo model" in named(lines, "model")


def test_embedded_redis_starts_and_stops(tmp_path: Path):
    embedded = EmbeddedRedis(tmp_path / "redis")
    url = embedded.start()
    try:
        assert Redis.from_url(url).ping()
    finally:
        embedded.stop()


SECRET = "planted-doctor-secret-3b8e"


def with_password(url: str, user: str = "default") -> str:
    """The test Redis's URL with a password in it (a Redis without AUTH accepts any for `default`)."""
    scheme, rest = url.split("://", 1)
    return f"{scheme}://{user}:{SECRET}@{rest}"


def test_urls_with_credentials_are_shown_redacted_when_all_is_well(
    tmp_path: Path, durable_redis_url: str, fake_slack: FakeSlack, fake_llm: FakeLLM
):
    redis_url = durable_redis_url
    settings = Settings.load(
        REDIS_URL=with_password(redis_url), SLACK_BOT_TOKEN=BOT_TOKEN, SLACK_API_URL=fake_slack.api_url,
        LLM_BASE_URL=with_password(fake_llm.base_url, "key"), LLM_MODEL="m", AGENT_WORKDIR=tmp_path,
        SLACK_APPROVERS="U0APPROVER",
    )  # fmt: skip
    lines: list[str] = []
    assert run_doctor(settings, lines.append) == 0
    assert lines[0].startswith(f"ok   redis      redis://default:***@{redis_url.split('://', 1)[1]} (Redis ")
    assert named(lines, "model").startswith("ok   model      http://key:***@127.0.0.1:")
    assert not [line for line in lines if SECRET in line]


def test_failures_quote_neither_passwords_nor_slack_bodies(tmp_path: Path, fake_slack: FakeSlack):
    metadata = {"response_metadata": {"messages": [f"[ERROR] token {SECRET} is not valid"]}}
    fake_slack.inject(Fault("auth.test", error="invalid_auth", extra=metadata))
    settings = Settings.load(
        REDIS_URL=f"redis://:{SECRET}@127.0.0.1:9/0", SLACK_BOT_TOKEN=BOT_TOKEN,
        SLACK_API_URL=fake_slack.api_url, LLM_BASE_URL=f"http://127.0.0.1:9/v1?api_key={SECRET}",
        LLM_MODEL="m", AGENT_WORKDIR=tmp_path,
    )  # fmt: skip
    lines: list[str] = []
    assert run_doctor(settings, lines.append) == 1
    assert lines[0].startswith("FAIL redis      redis://:***@127.0.0.1:9/0: ConnectionError")
    assert "auth.test answered invalid_auth" in named(lines, "slack")
    assert named(lines, "model").startswith("FAIL model      http://127.0.0.1:9/v1?api_key=***: ConnectError")
    assert not [line for line in lines if SECRET in line]


def test_the_sandbox_line_says_which_mode_is_in_force(tmp_path: Path):
    def sandbox_line(**settings: str) -> str:
        lines: list[str] = []
        run_doctor(Settings.load(AGENT_WORKDIR=tmp_path / "ws", **settings), lines.append)
        return next(line for line in lines if line.split()[1] == "sandbox")

    on = sandbox_line(SHELL_NETWORK_CHANNELS="C2,C1")
    assert on.startswith("ok   sandbox    bubblewrap ") and "network for C1, C2 only" in on
    off = sandbox_line(SHELL_SANDBOX="off")
    assert off.startswith("ok   sandbox    SHELL_SANDBOX=off: shell runs UNSANDBOXED")
    missing = sandbox_line(SHELL_BWRAP=str(tmp_path / "no-bwrap"))
    assert missing.startswith("FAIL sandbox    shell is refused: bubblewrap is not installed")
    assert "-- fix: install bubblewrap" in missing and "SHELL_SANDBOX=off (unsafe" in missing


def test_a_redis_that_forgets_on_restart_fails_with_the_settings_to_change(tmp_path: Path):
    forgetful = EmbeddedRedis(tmp_path / "redis")  # appendonly no, as redis-server starts by default
    try:
        lines: list[str] = []
        run_doctor(Settings.load(REDIS_URL=forgetful.start(), AGENT_WORKDIR=tmp_path / "ws"), lines.append)
    finally:
        forgetful.stop()
    persist = named(lines, "persist")
    assert persist.startswith("FAIL persist    appendonly no, maxmemory-policy noeviction")
    assert "fix: set appendonly yes" in persist


def test_a_redis_that_evicts_fails(tmp_path: Path, durable_redis_url: str):
    Redis.from_url(durable_redis_url).config_set("maxmemory-policy", "allkeys-lru")
    lines: list[str] = []
    run_doctor(Settings.load(REDIS_URL=durable_redis_url, AGENT_WORKDIR=tmp_path / "ws"), lines.append)
    assert named(lines, "persist").startswith("FAIL persist    appendonly yes, maxmemory-policy allkeys-lru")


def slack_line(fake_slack: FakeSlack, tmp_path: Path) -> str:
    settings = Settings.load(
        SLACK_BOT_TOKEN=BOT_TOKEN, SLACK_API_URL=fake_slack.api_url, AGENT_WORKDIR=tmp_path
    )
    lines: list[str] = []
    run_doctor(settings, lines.append)
    return named(lines, "slack")


def test_a_token_missing_a_scope_of_the_manifest_is_named(tmp_path: Path, fake_slack: FakeSlack):
    fake_slack.state.granted_scopes = sorted(set(BOT_SCOPES) - {"reactions:write", "users:read"})
    line = slack_line(fake_slack, tmp_path)
    assert (
        line.startswith("FAIL slack")
        and "lacks scopes the manifest asks for: reactions:write, users:read" in line
    )
    assert "reinstall the app" in line


def test_a_token_with_every_scope_passes(tmp_path: Path, fake_slack: FakeSlack):
    assert slack_line(fake_slack, tmp_path).startswith("ok   slack")
    assert "every scope of the manifest granted" in slack_line(fake_slack, tmp_path)


def test_replicas_show_the_topology_and_fail_without_the_replicas_an_ack_waits_for(
    tmp_path: Path, durable_redis_url: str
):
    alone = replicas_line(Settings.load(REDIS_URL=durable_redis_url))
    assert alone == ("ok", "no Sentinel; master with 0 replica(s); an acknowledgement waits for 0")
    verdict, said = replicas_line(Settings.load(REDIS_URL=durable_redis_url, REDIS_MIN_REPLICAS_ACK="1"))
    assert verdict == "FAIL" and "only 0 is online: every input is refused -- fix: start a replica" in said


def test_replicas_under_sentinel_name_the_primary_and_each_replica(tmp_path: Path):
    servers = SentinelRedis(tmp_path).start()
    try:
        settings = Settings.load(REDIS_URL=servers.url, **servers.settings)
        primary, replica = f"127.0.0.1:{servers.primary.port}", f"127.0.0.1:{servers.replica.port}"
        verdict, said = replicas_line(settings)
        assert verdict == "ok"
        assert said.startswith(f"3 of 3 Sentinels name {primary}; master with 1 replica(s) ({replica} online")
        assert said.endswith("an acknowledgement waits for 1")
        assert "threadline via Sentinel" in named(doctor_lines(settings), "redis")

        servers.replica.stop()
        gone = lambda: "only 0 is online" in replicas_line(settings)[1]  # noqa: E731
        wait_for(gone, what="the primary to lose its replica")
        assert replicas_line(settings)[0] == "FAIL"
    finally:
        servers.stop()


def doctor_lines(settings: Settings) -> list[str]:
    lines: list[str] = []
    run_doctor(settings, lines.append)
    return lines


def replicas_line(settings: Settings) -> tuple[str, str]:
    verdict, _, said = named(doctor_lines(settings), "replicas").split(None, 2)
    return verdict, said


def test_forges_line_says_which_repository_the_token_reaches_and_which_it_does_not(
    tmp_path: Path, forge: FakeForge
):
    def repo(kind: str) -> dict[str, str]:
        return {"url": f"{forge.url}/acme/app.git", "forge": kind, "repo": "acme/app"}

    base = {
        "AGENT_WORKDIR": tmp_path,
        "GITHUB_API_URL": forge.api_url,
        "GITLAB_API_URL": forge.gitlab_api_url,
    }
    lines: list[str] = []
    run_doctor(Settings.load(**base), lines.append)
    assert not [line for line in lines if line.split()[1] == "forges"]  # no channel takes pull requests

    both = {"C1": repo("github"), "C2": repo("gitlab")}
    lines.clear()
    run_doctor(Settings.load(**base, CHANNEL_REPOS=both, GITHUB_TOKEN=FORGE_TOKEN), lines.append)
    line = named(lines, "forges")
    assert line.startswith("FAIL forges     gitlab acme/app: no token (GITLAB_TOKEN)") and "-- fix:" in line

    lines.clear()
    settings = Settings.load(**base, CHANNEL_REPOS=both, GITHUB_TOKEN=FORGE_TOKEN, GITLAB_TOKEN="glpat-wrong")
    run_doctor(settings, lines.append)
    assert "gitlab acme/app: the forge did not accept the token" in named(lines, "forges")
    assert "glpat-wrong" not in "\n".join(lines)

    lines.clear()
    settings = Settings.load(**base, CHANNEL_REPOS=both, GITHUB_TOKEN=FORGE_TOKEN, GITLAB_TOKEN=FORGE_TOKEN)
    run_doctor(settings, lines.append)
    assert named(lines, "forges") == "ok   forges     the token reaches github acme/app, gitlab acme/app"


def test_mcp_line_lists_each_servers_tools_and_names_the_one_that_does_not_answer(tmp_path: Path):
    server = McpFixture(tmp_path).start()
    try:
        down = f"http://127.0.0.1:{free_port()}/mcp"
        servers = {"fixture": {"url": server.url, "internal": True}, "gone": {"url": down, "internal": True}}
        lines: list[str] = []
        run_doctor(Settings.load(AGENT_WORKDIR=tmp_path, MCP_SERVERS=servers), lines.append)
    finally:
        server.stop()
    line = named(lines, "mcp")
    listed = "fixture: 10 tool(s) (fixture__echo, fixture__add, fixture__find, "
    assert line.startswith(f"FAIL mcp        {listed}")
    assert "; gone: not answering (" in line and "-- fix:" in line

    lines.clear()
    run_doctor(Settings.load(AGENT_WORKDIR=tmp_path), lines.append)
    assert not [line for line in lines if line.split()[1] == "mcp"]  # no server configured
